//! How many hosts are crawled at once (BUbiNG's workbench): a host enters at its first
//! request while there is room (its robots.txt then keeps its connection for the pages), else
//! at its second page once there is (its robots.txt and first page go without room: their
//! answers tell how slow it is), and leaves when nothing of it is queued or under way. Past
//! the limit, hosts with pages wait outside, the longest to crawl first (URLs waiting, or the
//! pages of a host crawled through on average if more, times its last answer's time and the
//! delay after it), which is what bounds a crawl's end when slow hosts would otherwise start
//! last. A host whose pages each cost at least twice the minimum delay (a slow server, or a
//! long `Crawl-delay`) does not wait while fewer hosts than the limit and a tenth of it are
//! in: its crawl is the one that ends last if it starts late, and a line keyed by
//! a guess of its size (its in-degree, or the hosts crawled through so far) kept the slowest
//! host of 10,000 out for 77-86 s. Each host crawled at once holds an open connection (about
//! 27 KB of client buffers) and its buffered URLs, so ten thousand hosts interleaved cost
//! 400 MB where a few thousand crawled through keep the machine as busy.

use super::Frontier;
use super::host::{ByCash, Host};
use crate::ids::HostId;
use std::collections::BinaryHeap;

/// Hosts crawled at once by default: at a second between requests to a host this is
/// thousands of requests a second, more than one process fetches and analyses.
pub(crate) const DEFAULT_HOSTS_AT_ONCE: usize = 3000;

/// The hosts being crawled and those waiting for room.
#[derive(Debug, Default)]
pub(super) struct Workbench {
    /// The most hosts crawled at once; 0: no limit.
    pub(super) limit: usize,
    /// Hosts in.
    pub(super) inside: usize,
    /// Hosts with pages, waiting for room, the longest to crawl on top.
    waiting: BinaryHeap<ByCash>,
    /// Hosts that left with pages handed out, and those pages.
    crawled: (u64, u64),
    /// The typical size the waiting hosts were keyed with.
    keyed_with: u64,
    /// Seconds a page must cost its host's crawl (answer and delay) for the host to come in
    /// past the limit; 0: none does.
    slow_page: f64,
}

impl Workbench {
    /// Whether `h` may be sent a page: in already, or taken in now that there is room (for
    /// a slow host, in the tenth past the limit too). A host without room is put in line
    /// (`key`: the seconds its crawl will take at least) and false returned.
    pub(super) fn admit(&mut self, h: &mut Host, key: f64) -> bool {
        if h.place.on_bench() {
            return true;
        }
        let slow = self.slow_page > 0.0 && h.page_seconds() >= self.slow_page;
        let past = self.limit.saturating_add(self.limit.div_ceil(10));
        if self.full() && !(slow && self.inside < past) {
            if !h.place.waiting_room() {
                h.place.wait_for_room();
                self.waiting.push(ByCash(key, h.id));
            }
            return false;
        }
        h.place.bench();
        self.inside += 1;
        true
    }

    /// Takes `h` in at a request made before its pages (robots.txt, a cooperation probe) if
    /// there is room, so that its pages after the first need not wait; with no room the host
    /// waits for its second page.
    pub(super) fn admit_if_room(&mut self, h: &mut Host) {
        if h.place.on_bench() || self.full() {
            return;
        }
        h.place.bench();
        self.inside += 1;
    }

    /// Whether every place is taken.
    fn full(&self) -> bool {
        self.limit > 0 && self.inside >= self.limit
    }

    /// Takes `h` off the bench if nothing of it is queued or under way (or it was given up);
    /// returns whether that freed a place for a host waiting (not one past the limit).
    pub(super) fn release_if_done(&mut self, h: &mut Host) -> bool {
        let done = h.in_flight == 0 && (h.skipped.is_some() || !h.has_queue());
        if h.place.on_bench() && done {
            if h.handed > 0 {
                self.crawled.0 += 1;
                self.crawled.1 += h.handed;
            }
            h.place.unbench();
            self.inside = self.inside.saturating_sub(1);
            return !self.full();
        }
        false
    }

    /// Pages a host crawled through had, on average (0 before any).
    pub(super) fn typical(&self) -> u64 {
        self.crawled.1.checked_div(self.crawled.0).unwrap_or(0)
    }

    /// Keys the hosts waiting again once the typical size has doubled since they were: the
    /// first hosts wait before any host was crawled through.
    pub(super) fn rekey(&mut self, hosts: &std::collections::HashMap<HostId, Host>) {
        let typical = self.typical();
        if typical < 2 * self.keyed_with.max(1) {
            return;
        }
        self.keyed_with = typical;
        let waiting = std::mem::take(&mut self.waiting);
        self.waiting = waiting
            .into_iter()
            .filter_map(|ByCash(_, id)| {
                let h = hosts.get(&id).filter(|h| h.place.waiting_room())?;
                Some(ByCash(h.crawl_seconds_left(typical), id))
            })
            .collect();
    }

    /// The next host waiting for room, if any (it is then no longer waiting).
    pub(super) fn next_waiting(&mut self, mut valid: impl FnMut(HostId) -> bool) -> Option<HostId> {
        while let Some(ByCash(_, id)) = self.waiting.pop() {
            if valid(id) {
                return Some(id);
            }
        }
        None
    }
}

impl Frontier {
    /// Whether a host is being crawled (on the workbench): its connection is worth keeping.
    pub(crate) fn on_bench(&self, id: HostId) -> bool {
        self.hosts.get(&id).is_some_and(|h| h.place.on_bench())
    }

    /// Whether a request to a host keeps its connection: on the workbench, or in its first
    /// look (robots.txt and the probes, whose first page follows within a delay); otherwise
    /// the connection would only wait idle, 27 KB of buffers, until the host's turn.
    pub(crate) fn keeps_connection(&self, id: HostId) -> bool {
        self.on_bench(id) || self.hosts.get(&id).is_some_and(|h| h.handed == 0)
    }

    /// Hosts being crawled at once (on the workbench).
    pub(crate) fn hosts_inside(&self) -> usize {
        self.bench.inside
    }

    /// Sets the most hosts crawled at once (0: no limit), and the minimum delay between
    /// requests to a host: a host whose pages cost twice that comes in past the limit.
    pub(crate) fn set_hosts_at_once(&mut self, limit: usize, min_delay: std::time::Duration) {
        self.bench.limit = limit;
        self.bench.slow_page = 2.0 * min_delay.as_secs_f64();
    }

    /// Lets the next host waiting for room onto the workbench, as a place was freed.
    pub(super) fn admit_waiting(&mut self) {
        self.bench.rekey(&self.hosts);
        let hosts = &mut self.hosts;
        let next = self.bench.next_waiting(|id| {
            hosts.get_mut(&id).is_some_and(|h| {
                let waiting = h.place.waiting_room();
                h.place.leave_waiting_room();
                waiting && h.skipped.is_none() && h.has_queue()
            })
        });
        if let Some(id) = next {
            self.schedule(id);
        }
    }

    /// Whether any host has work left (queued or under way).
    pub(crate) fn has_work(&self) -> bool {
        self.hosts
            .values()
            .any(|h| h.in_flight > 0 || (h.skipped.is_none() && !h.blocked && h.has_queue()))
    }

    /// Whether any host has work it may start by `deadline` (or has some under way): the
    /// others are parked beyond it.
    pub(crate) fn has_work_by(&self, deadline: std::time::Instant) -> bool {
        self.hosts.values().any(|h| {
            h.in_flight > 0
                || (h.skipped.is_none()
                    && !h.blocked
                    && h.has_queue()
                    && h.next_allowed <= deadline)
        })
    }

    /// Hosts with work parked beyond `deadline`, and their URLs.
    pub(crate) fn parked_beyond(&self, deadline: std::time::Instant) -> (usize, u64) {
        self.hosts
            .values()
            .filter(|h| {
                h.skipped.is_none() && !h.blocked && h.has_queue() && h.next_allowed > deadline
            })
            .fold((0, 0), |(n, urls), h| (n + 1, urls + h.waiting()))
    }

    /// Hosts with work.
    pub(crate) fn active_hosts(&self) -> usize {
        self.hosts
            .values()
            .filter(|h| h.in_flight > 0 || (h.skipped.is_none() && !h.blocked && h.has_queue()))
            .count()
    }
}
