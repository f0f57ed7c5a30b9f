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
    /// Why the host is not crawled.
    pub(crate) skipped: Option<String>,
    /// Cooperation requests waiting (metadata, hub), served before pages.
    pub(super) coop: VecDeque<CoopJob>,
    /// Whether it waits in the frontier's heap.
    pub(super) in_heap: bool,
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
    /// Among the hosts crawled at once (the workbench).
    pub(super) on_bench: bool,
    /// Waiting for room on the workbench.
    pub(super) waiting_room: bool,
    /// Pages handed out.
    pub(super) handed: u64,
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
            skipped: None,
            coop: VecDeque::new(),
            in_heap: false,
            leased: false,
            address: super::servers::Address::Unknown,
            blocked: false,
            holding: false,
            delay_set: None,
            delay: (std::time::Duration::ZERO, DelayWhy::Minimum),
            answered_in: std::time::Duration::ZERO,
            on_bench: false,
            waiting_room: false,
            handed: 0,
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
        !self.buffer.is_empty() || self.queued > 0 || !self.coop.is_empty()
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
