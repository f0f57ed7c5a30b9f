//! One host as the frontier holds it: its robots.txt, its politeness clock, the next of its
//! URLs in memory, and the order in which hosts whose time has come are served.

use super::CoopJob;
use super::politeness::DelayWhy;
use super::robots::Rules;
use crate::ids::HostId;
use crate::state::Queued;
use std::cmp::Ordering;
use std::collections::{HashSet, VecDeque};
use std::time::Instant;

/// A host's robots.txt, as far as the frontier is concerned.
#[derive(Debug, Clone)]
pub(crate) enum RobotsState {
    /// Not fetched yet, or expired.
    Unknown,
    /// Being fetched.
    Fetching,
    /// Known until the instant.
    Known(Rules, Instant),
}

/// Where a host stands in the frontier's scheduling: among the hosts crawled at once (the
/// workbench) or not, and waiting for its time in the heap, waiting for room on the workbench,
/// or neither. One value, so that a host can be in no two lines at once (the waiting room is
/// off the bench and out of the heap); its moves are the methods below, each a no-op where
/// the move does not apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// Off the bench, in no line.
    Out,
    /// Off the bench, in the heap (its robots.txt or first page, which go without room).
    OutHeaped,
    /// Off the bench, waiting for room on it.
    WaitingRoom,
    /// On the bench, in no line (its requests under way, or nothing queued).
    In,
    /// On the bench, in the heap.
    InHeaped,
}

impl Place {
    /// On the workbench.
    pub(super) fn on_bench(self) -> bool {
        matches!(self, Place::In | Place::InHeaped)
    }

    /// In the frontier's heap.
    pub(super) fn in_heap(self) -> bool {
        matches!(self, Place::OutHeaped | Place::InHeaped)
    }

    /// Waiting for room on the workbench.
    pub(super) fn waiting_room(self) -> bool {
        self == Place::WaitingRoom
    }

    /// Into the heap (not from the waiting room: a host there waits for room first).
    pub(super) fn heap(&mut self) {
        *self = match *self {
            Place::Out => Place::OutHeaped,
            Place::In => Place::InHeaped,
            p => p,
        };
    }

    /// Out of the heap (its turn came).
    pub(super) fn unheap(&mut self) {
        *self = match *self {
            Place::OutHeaped => Place::Out,
            Place::InHeaped => Place::In,
            p => p,
        };
    }

    /// Into the waiting room, from no line off the bench.
    pub(super) fn wait_for_room(&mut self) {
        if *self == Place::Out {
            *self = Place::WaitingRoom;
        }
    }

    /// Out of the waiting room (to be scheduled again).
    pub(super) fn leave_waiting_room(&mut self) {
        if *self == Place::WaitingRoom {
            *self = Place::Out;
        }
    }

    /// Onto the bench, from the waiting room or off it, keeping its place in the heap.
    pub(super) fn bench(&mut self) {
        *self = match *self {
            Place::Out | Place::WaitingRoom => Place::In,
            Place::OutHeaped => Place::InHeaped,
            p => p,
        };
    }

    /// Off the bench, keeping its place in the heap.
    pub(super) fn unbench(&mut self) {
        *self = match *self {
            Place::In => Place::Out,
            Place::InHeaped => Place::OutHeaped,
            p => p,
        };
    }
}

/// One host.
#[derive(Debug)]
pub(crate) struct Host {
    /// Database id.
    pub(crate) id: HostId,
    /// `scheme://host[:port]`.
    pub(crate) origin: String,
    /// URLs waiting outside `buffer` (in the database or not saved yet).
    pub(super) queued: u64,
    /// The next URLs, best first.
    pub(super) buffer: VecDeque<Queued>,
    /// URLs found since the last saved batch that did not fit in the buffer.
    pub(super) unsaved: Vec<Queued>,
    /// Rows handed out and not yet settled (fetching, or waiting for their batch to be saved).
    pub(super) taken: HashSet<i64>,
    /// Rows read from the store that a refill did not keep, still counted in `queued`.
    pub(super) ahead: Vec<Queued>,
    /// Where the last read from the store stopped (priority, row): the rows before it are
    /// in `buffer`, `ahead` or `taken`, until a saved batch adds rows to the store.
    pub(super) read_to: Option<(f64, i64)>,
    /// Requests under way (or waiting on the fetching side).
    pub(crate) in_flight: usize,
    /// Requests it may be handed beyond its connections, to wait on the fetching side: only
    /// while its delay is zero.
    pub(super) lookahead: usize,
    /// Earliest time of the next request.
    pub(crate) next_allowed: Instant,
    /// robots.txt.
    pub(crate) robots: RobotsState,
    /// Consecutive failures.
    pub(crate) failures: u32,
    /// Whether it ever answered (an HTTP status, this run or one saved before): a host that
    /// never did is given up on sooner in a one-pass crawl.
    pub(crate) answered: bool,
    /// Why the host is not crawled.
    pub(crate) skipped: Option<String>,
    /// Cooperation requests waiting (metadata, hub), served before pages.
    pub(super) coop: VecDeque<CoopJob>,
    /// Blind requests for well-known paths, served only while no page of the host waits.
    pub(super) probes: VecDeque<CoopJob>,
    /// On the workbench or not, and in the heap, in the waiting room or neither.
    pub(super) place: Place,
    /// In a fleet: whether this process holds the host's lease (only then is it contacted).
    pub(super) leased: bool,
    /// Its server's address, when politeness is keyed by address.
    pub(crate) address: super::servers::Address,
    /// Blocked from the console: nothing is fetched, its URLs stay queued.
    pub(crate) blocked: bool,
    /// Its pages wait while a snapshot of the site is fetched and read (its cooperation
    /// requests go on).
    pub(crate) holding: bool,
    /// The delay set from the console, in place of the policy's.
    pub(crate) delay_set: Option<std::time::Duration>,
    /// The delay after its last request, and why it is that long.
    pub(crate) delay: (std::time::Duration, DelayWhy),
    /// How long its last answer took: with the delay, what each of its pages costs its crawl.
    pub(crate) answered_in: std::time::Duration,
    /// Pages handed out.
    pub(super) handed: u64,
    /// Pages to hand out before its probes are due (`--probe-after`).
    pub(super) probe_after: u64,
}

impl Host {
    pub(super) fn new(id: HostId, origin: String, queued: u64, now: Instant) -> Host {
        Host {
            id,
            origin,
            queued,
            buffer: VecDeque::new(),
            unsaved: Vec::new(),
            taken: HashSet::new(),
            ahead: Vec::new(),
            read_to: None,
            in_flight: 0,
            lookahead: 0,
            next_allowed: now,
            robots: RobotsState::Unknown,
            failures: 0,
            answered: false,
            skipped: None,
            coop: VecDeque::new(),
            probes: VecDeque::new(),
            place: Place::Out,
            leased: false,
            address: super::servers::Address::Unknown,
            blocked: false,
            holding: false,
            delay_set: None,
            delay: (std::time::Duration::ZERO, DelayWhy::Minimum),
            answered_in: std::time::Duration::ZERO,
            handed: 0,
            probe_after: 0,
        }
    }

    /// Forgets what was read from the store beyond the buffer: the next refill reads from
    /// the top again.
    pub(super) fn reread(&mut self) {
        self.ahead.clear();
        self.read_to = None;
    }

    /// Whether it has URLs waiting.
    pub(crate) fn has_queue(&self) -> bool {
        !self.buffer.is_empty() || self.queued > 0 || !self.coop.is_empty() || self.probes_earned()
    }

    /// Whether a probe waits and enough of the host's pages were handed out for it: below
    /// that, the probe waits (for the refreshes of a crawl kept fresh), and a one-pass crawl
    /// of a small host ends without it.
    fn probes_earned(&self) -> bool {
        !self.probes.is_empty() && self.handed >= self.probe_after
    }

    /// A probe, if one is earned and no page waits: probes never delay a page.
    pub(super) fn probe_due(&mut self) -> Option<CoopJob> {
        if self.buffer.is_empty() && self.queued == 0 && !self.holding && self.probes_earned() {
            self.probes.pop_front()
        } else {
            None
        }
    }

    /// Whether a cooperation request waits.
    pub(crate) fn coop_waiting(&self) -> bool {
        !self.coop.is_empty()
    }

    /// URLs waiting.
    pub(crate) fn waiting(&self) -> u64 {
        self.queued + self.buffer.len() as u64
    }

    /// What its crawl will take from here, in seconds, as far as it is known: each URL
    /// costs an answer and the delay after it, as the last one did. The answer's time counts
    /// because a slow server's pages take it on top of the delay, and a delay at its minimum
    /// says nothing of how slow the server is. A host not crawled yet knows only the URLs
    /// other hosts link to (its in-degree, not its size), and one sent only its first page
    /// knows that page's links besides: it counts as at least `typical` pages, what the
    /// hosts crawled through had.
    pub(super) fn crawl_seconds_left(&self, typical: u64) -> f64 {
        let pages = match self.handed {
            0 | 1 => self.waiting().max(typical),
            _ => self.waiting(),
        };
        pages as f64 * self.page_seconds().max(0.001)
    }

    /// What a page costs its crawl, as the last one did: its answer and the delay after it.
    /// A park after failures or a `Retry-After` is not counted: it says the host is failing,
    /// not that it is large, and counting it let failing hosts in first (and past the limit),
    /// to hold places while parked (a crawl at 10,000 hosts filled all 3,300 places so).
    pub(super) fn page_seconds(&self) -> f64 {
        let delay = match self.delay.1 {
            DelayWhy::Parked | DelayWhy::RetryAfter => std::time::Duration::ZERO,
            _ => self.delay.0,
        };
        (delay + self.answered_in).as_secs_f64()
    }
}

/// A host whose time has come, keyed by the cash of its best URL.
#[derive(Debug, Clone, Copy)]
pub(super) struct ByCash(pub(super) f64, pub(super) HostId);

impl PartialEq for ByCash {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for ByCash {}
impl PartialOrd for ByCash {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ByCash {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
    }
}

#[cfg(test)]
mod place_tests {
    use super::Place;

    #[test]
    fn a_host_moves_between_lines_only_as_its_place_allows() {
        let mut p = Place::Out;
        p.heap();
        assert_eq!(p, Place::OutHeaped);
        // A host in the heap is not put in the waiting room (its turn comes first).
        p.wait_for_room();
        assert_eq!(p, Place::OutHeaped);
        p.bench();
        assert_eq!(p, Place::InHeaped, "the bench keeps its place in the heap");
        assert!(p.on_bench() && p.in_heap() && !p.waiting_room());
        p.unheap();
        p.unbench();
        assert_eq!(p, Place::Out);
        p.wait_for_room();
        assert!(p.waiting_room() && !p.in_heap() && !p.on_bench());
        // Waiting for room, it is scheduled only once it leaves the room or is let in.
        p.heap();
        assert_eq!(p, Place::WaitingRoom);
        p.bench();
        assert_eq!(p, Place::In);
        let mut q = Place::WaitingRoom;
        q.leave_waiting_room();
        assert_eq!(q, Place::Out);
        // Moves that do not apply change nothing.
        for mut p in [Place::Out, Place::In] {
            let was = p;
            p.unheap();
            p.leave_waiting_room();
            assert_eq!(p, was);
        }
    }
}
