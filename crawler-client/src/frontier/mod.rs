//! The frontier: which URL to fetch next, and when.
//!
//! Every queued URL is in the crawl database; in memory are only the seen-set (8-byte
//! fingerprints), one small record per host, a short buffer of the next URLs of each host that
//! was visited, and the URLs found since the last saved batch. Hosts wait in a heap keyed by
//! the time they may next be contacted; within a host, URLs come best first by priority, then
//! in arrival order. A URL's priority is its OPIC cash (see `cash`); among hosts whose time has
//! come, the one whose best URL has the most cash goes first.

pub(crate) mod cash;
mod dispatch;
pub(crate) mod fleet;
mod host;
mod leased;
mod operator;
pub(crate) mod politeness;
mod priority;
pub(crate) mod queue_store;
mod refill;
pub(crate) mod robots;
pub(crate) mod servers;
pub(crate) mod shared;
mod workbench;

pub(crate) use workbench::DEFAULT_HOSTS_AT_ONCE;

use crate::frontier::cash::{CashBook, CashTotals};
use crate::frontier::robots::Rules;
use crate::ids::{Fp, HostId};
use crate::state::{HostRecord, NewUrl, Queued};
pub(crate) use dispatch::{CoopJob, Dispatch, MetaKind};
use host::ByCash;
pub(crate) use host::{Host, RobotsState};
use queue_store::QueueStore;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::time::Instant;

/// URLs of a host held in memory.
const BUFFER: usize = 16;

/// URLs of a host a fleet's refill takes at once: each refill is a round trip to the shared
/// queue, and rows taken stay this process's while it holds the host (they go back with it).
const FLEET_TAKE: usize = 64;

/// A refill reads this many buffers' worth of rows and keeps the best.
const REFILL_WINDOW: usize = 4;

/// Priority of a refresh: ahead of every new URL of its host (the schedule decided it is due).
const REVISIT_PRIORITY: f64 = 1e300;

/// Most URLs queued for one host (at 48 bytes each in memory, about 48 MB).
pub(crate) const MAX_QUEUED_PER_HOST: u64 = 1_000_000;

/// A request of `h` is no longer under way: one fewer beyond its connections if it had more.
fn land(h: &mut Host, per_host: usize, surplus: &mut usize) {
    if h.in_flight > per_host {
        *surplus = surplus.saturating_sub(1);
    }
    h.in_flight = h.in_flight.saturating_sub(1);
}

/// Best first: higher priority, then earlier arrival.
fn better(a: &Queued, b: &Queued) -> Ordering {
    b.priority
        .partial_cmp(&a.priority)
        .unwrap_or(Ordering::Equal)
        .then(a.seq.cmp(&b.seq))
}

/// The frontier.
pub(crate) struct Frontier {
    hosts: HashMap<HostId, Host>,
    by_origin: HashMap<String, HostId>,
    heap: BinaryHeap<Reverse<(Instant, HostId)>>,
    ready: BinaryHeap<ByCash>,
    cash: CashBook,
    next_seq: i64,
    pending: Vec<NewUrl>,
    pending_at: HashMap<Fp, usize>,
    with_unsaved: HashSet<HostId>,
    /// Hosts with rows in the batch being saved.
    with_saved: HashSet<HostId>,
    per_host: usize,
    /// Requests handed out beyond their hosts' connections: the sum over hosts of
    /// `in_flight - per_host` where that is positive.
    surplus: usize,
    queue_cap: u64,
    /// Pages of a host handed out before its probes are due.
    probe_after: u64,
    /// One of a fleet: new URLs go to the shared queue only, and hosts are contacted only
    /// while leased.
    shared: bool,
    /// Politeness keyed by server address: hosts of one address share its clock.
    by_address: bool,
    servers: servers::Servers,
    /// Hosts blocked and delays set from the console.
    operator: operator::OperatorSet,
    /// What a site's stated popularity adds to a page's cash in its host's order (see
    /// `coop::popularity`); the cash itself, and OPIC's accounting, are unchanged.
    boosts: HashMap<Fp, f64>,
    /// The hosts crawled at once, and those waiting for room.
    bench: workbench::Workbench,
}

impl Frontier {
    /// The frontier over `store`'s queue, seen-set and hosts. `host_state` gives each stored
    /// host its robots.txt state, skip reason and first allowed time; `eps` is the share of a
    /// page's cash that goes to OPIC's virtual page.
    pub(crate) fn load<S: QueueStore>(
        store: &S,
        per_host: usize,
        eps: f64,
        mut host_state: impl FnMut(&HostRecord) -> (RobotsState, Option<String>, Instant),
    ) -> Result<Self, S::Error> {
        let totals: CashTotals = store
            .cash_totals()?
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        let mut keys = HashMap::new();
        store.load_seen(&mut keys, -totals.u)?;
        let cash = CashBook::new(keys, totals, eps);
        let queued: HashMap<HostId, u64> = store.queued_per_host()?.into_iter().collect();
        let next_seq = store.max_queue_seq()? + 1;
        let mut f = Frontier {
            hosts: HashMap::new(),
            by_origin: HashMap::new(),
            heap: BinaryHeap::new(),
            ready: BinaryHeap::new(),
            cash,
            next_seq,
            pending: Vec::new(),
            pending_at: HashMap::new(),
            with_unsaved: HashSet::new(),
            with_saved: HashSet::new(),
            per_host: per_host.max(1),
            surplus: 0,
            queue_cap: MAX_QUEUED_PER_HOST,
            probe_after: 0,
            shared: false,
            by_address: false,
            servers: servers::Servers::default(),
            operator: operator::OperatorSet::default(),
            boosts: HashMap::new(),
            bench: workbench::Workbench::default(),
        };
        let now = Instant::now();
        for rec in store.hosts()? {
            let mut host = f.new_host(
                rec.id,
                rec.origin.clone(),
                queued.get(&rec.id).copied().unwrap_or(0),
                now,
            );
            let (robots, skipped, next_allowed) = host_state(&rec);
            host.robots = robots;
            host.skipped = skipped;
            host.next_allowed = next_allowed;
            host.failures = rec.failures;
            host.answered = rec.robots_status.is_some();
            f.by_origin.insert(rec.origin, rec.id);
            f.hosts.insert(rec.id, host);
            f.schedule(rec.id);
        }
        Ok(f)
    }

    /// Keys politeness by server address (`--politeness-key ip`): each host's address is
    /// looked up before its first request ([`Dispatch::Resolve`]).
    pub(crate) fn by_address(&mut self) {
        self.by_address = true;
    }

    /// Whether politeness is keyed by server address.
    pub(crate) fn keyed_by_address(&self) -> bool {
        self.by_address
    }

    /// A host's address was looked up (none when it could not be: it is then paced alone).
    pub(crate) fn resolved(&mut self, id: HostId, ip: Option<std::net::IpAddr>) {
        if let Some(h) = self.hosts.get_mut(&id) {
            land(h, self.per_host, &mut self.surplus);
            h.address = servers::Address::Known(ip);
        }
        self.schedule(id);
    }

    /// A host as this frontier makes them: the operator's blocks and delays applied, and
    /// the run's probe threshold.
    fn new_host(&self, id: HostId, origin: String, queued: u64, now: Instant) -> Host {
        let mut host = Host::new(id, origin, queued, now);
        self.operator.apply(&mut host);
        host.probe_after = self.probe_after;
        host
    }

    /// Knows a host by an id given elsewhere (a fleet's).
    pub(crate) fn known(&mut self, id: HostId, origin: &str) {
        if !self.hosts.contains_key(&id) {
            self.by_origin.insert(origin.to_string(), id);
            let host = self.new_host(id, origin.to_string(), 0, Instant::now());
            self.hosts.insert(id, host);
        }
    }

    /// The id of a host known by its origin.
    pub(crate) fn id_of(&self, origin: &str) -> Option<HostId> {
        self.by_origin.get(origin).copied()
    }

    /// The host record.
    pub(crate) fn host(&self, id: HostId) -> Option<&Host> {
        self.hosts.get(&id)
    }

    /// The host record, to change (call [`Frontier::schedule`] after).
    pub(crate) fn host_mut(&mut self, id: HostId) -> Option<&mut Host> {
        self.hosts.get_mut(&id)
    }

    /// The id of the host with `origin`, added if new.
    pub(crate) fn host_for<S: QueueStore>(
        &mut self,
        store: &S,
        origin: &str,
    ) -> Result<HostId, S::Error> {
        if let Some(id) = self.by_origin.get(origin) {
            return Ok(*id);
        }
        let id = store.host_id(origin)?;
        self.by_origin.insert(origin.to_string(), id);
        let host = self.new_host(id, origin.to_string(), 0, Instant::now());
        self.hosts.insert(id, host);
        Ok(id)
    }

    /// Whether a URL with this fingerprint was ever queued.
    pub(crate) fn seen(&self, fp: Fp) -> bool {
        self.cash.contains(fp)
    }

    /// Fingerprints in the seen-set.
    pub(crate) fn seen_len(&self) -> usize {
        self.cash.len()
    }

    /// The OPIC cash book.
    pub(crate) fn cash(&self) -> &CashBook {
        &self.cash
    }

    /// Queues a URL of a known host unless already seen; returns whether it was new.
    pub(crate) fn push(
        &mut self,
        host: HostId,
        url: String,
        fp: Fp,
        depth: u32,
        hops: u32,
    ) -> bool {
        // A site generating links without end (or a sitemap listing millions) fills its own
        // queue only up to the cap; what is left out is found again once there is room.
        match self.hosts.get(&host) {
            None => return false,
            Some(h) if h.queued + h.buffer.len() as u64 >= self.queue_cap => return false,
            Some(_) => {}
        }
        let Some(priority) = self.cash.discover(fp) else {
            return false;
        };
        let priority = priority + self.boost_of(fp);
        self.enqueue(host, url, fp, depth, hops, priority, false);
        true
    }

    /// Holds the host's pages (a snapshot of its site is being read), or lets them go.
    pub(crate) fn hold_pages(&mut self, id: HostId, hold: bool) {
        if let Some(h) = self.hosts.get_mut(&id) {
            h.holding = hold;
        }
        if !hold {
            self.schedule(id);
        }
    }

    /// Marks a URL seen without queueing it (its page came from a snapshot); false when it
    /// was seen already.
    pub(crate) fn mark_seen(&mut self, fp: Fp) -> bool {
        self.cash.discover(fp).is_some()
    }

    /// Queues a cooperation request to a host (unless the same one already waits).
    pub(crate) fn push_coop(&mut self, host: HostId, job: CoopJob) {
        if let Some(h) = self.hosts.get_mut(&host) {
            if h.coop.contains(&job) {
                return;
            }
            h.coop.push_back(job);
        }
        self.schedule(host);
    }

    /// Queues a blind request for a well-known path, served only while none of the host's
    /// pages waits (unless the same one already waits).
    pub(crate) fn push_probe(&mut self, host: HostId, job: CoopJob) {
        if let Some(h) = self.hosts.get_mut(&host) {
            if h.probes.contains(&job) {
                return;
            }
            h.probes.push_back(job);
        }
        self.schedule(host);
    }

    /// Sets how many of a host's pages are handed out in a run before its probes are due
    /// (default 0).
    pub(crate) fn set_probe_after(&mut self, pages: u64) {
        self.probe_after = pages;
        for h in self.hosts.values_mut() {
            h.probe_after = pages;
        }
    }

    /// Probes `host` after its pages however few they are (a seed's host).
    pub(crate) fn probe_from_the_start(&mut self, host: HostId) {
        if let Some(h) = self.hosts.get_mut(&host) {
            h.probe_after = 0;
        }
    }

    /// Sets the most URLs one host may have queued (default [`MAX_QUEUED_PER_HOST`]).
    #[cfg(test)]
    pub(crate) fn set_queue_cap(&mut self, cap: u64) {
        self.queue_cap = cap.max(1);
    }

    /// Drops the cooperation requests of a host that `which` selects; returns how many.
    pub(crate) fn drop_coop(&mut self, host: HostId, which: impl Fn(&CoopJob) -> bool) -> usize {
        let Some(h) = self.hosts.get_mut(&host) else {
            return 0;
        };
        let before = h.coop.len();
        h.coop.retain(|job| !which(job));
        before - h.coop.len()
    }

    /// Queues a page visited before, to refresh it, ahead of new URLs of its host.
    pub(crate) fn push_revisit(&mut self, host: HostId, url: String, fp: Fp, depth: u32) {
        if self.hosts.contains_key(&host) {
            self.enqueue(host, url, fp, depth, 0, REVISIT_PRIORITY, true);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn enqueue(
        &mut self,
        host: HostId,
        url: String,
        fp: Fp,
        depth: u32,
        hops: u32,
        priority: f64,
        revisit: bool,
    ) {
        let Some(h) = self.hosts.get_mut(&host) else {
            return;
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        let row = Queued {
            seq,
            host,
            fp,
            url,
            depth,
            hops,
            attempts: 0,
            priority,
            revisit,
        };
        // In a fleet, what this process finds goes to the shared queue, and so does a
        // revisit of a host another process holds; a revisit of a host held stays here.
        let offered = self.shared && (!revisit || !h.leased);
        if offered || !self.shared {
            self.pending_at.insert(fp, self.pending.len());
            self.pending.push(NewUrl {
                seq,
                host,
                url: row.url.clone(),
                fp,
                depth,
                hops,
                priority,
                revisit,
            });
        }
        if offered {
            return;
        }
        // Straight into the buffer while nothing else waits outside it, so the order stays
        // exact and a new host need not wait for the batch to be saved.
        // A fleet's revisit of a host held is not saved anywhere: it waits in memory.
        if self.shared || (h.queued == 0 && h.buffer.len() < BUFFER) {
            let at = h
                .buffer
                .partition_point(|q| better(q, &row) != Ordering::Greater);
            h.buffer.insert(at, row);
        } else {
            h.queued += 1;
            h.unsaved.push(row);
            self.with_unsaved.insert(host);
        }
        self.schedule(host);
    }

    /// Whether a URL was found since the last saved batch.
    pub(crate) fn is_pending(&self, fp: Fp) -> bool {
        self.pending_at.contains_key(&fp)
    }

    /// New URLs not saved yet.
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Takes the new URLs to save in the next batch. Call [`Frontier::saved`] once it is.
    pub(crate) fn drain_pending(&mut self) -> Vec<NewUrl> {
        self.pending_at.clear();
        let pending = std::mem::take(&mut self.pending);
        self.with_saved.extend(pending.iter().map(|u| u.host));
        pending
    }

    /// The batch holding the drained URLs and these settled rows (`(host, seq)`) was saved.
    pub(crate) fn saved(&mut self, settled: &[(HostId, i64)]) {
        for id in self.with_unsaved.drain() {
            if let Some(h) = self.hosts.get_mut(&id) {
                h.unsaved.clear();
            }
        }
        // Rows saved may rank before where the last read stopped.
        for id in self.with_saved.drain() {
            if let Some(h) = self.hosts.get_mut(&id) {
                h.reread();
            }
        }
        for (host, seq) in settled {
            if let Some(h) = self.hosts.get_mut(host) {
                h.taken.remove(seq);
            }
        }
    }

    /// Puts a host in the heap if it has work and room and is not already there.
    pub(crate) fn schedule(&mut self, id: HostId) {
        let Some(h) = self.hosts.get_mut(&id) else {
            return;
        };
        if h.place.in_heap()
            || h.place.waiting_room()
            || h.skipped.is_some()
            || h.blocked
            || !h.has_queue()
            || h.in_flight >= self.per_host + h.lookahead
        {
            return;
        }
        if self.shared && !h.leased {
            return;
        }
        if matches!(h.robots, RobotsState::Fetching) {
            return;
        }
        h.place.heap();
        self.heap.push(Reverse((h.next_allowed, id)));
    }

    /// When the next host becomes eligible.
    pub(crate) fn next_wakeup(&self) -> Option<Instant> {
        if !self.ready.is_empty() {
            return Some(Instant::now());
        }
        self.heap.peek().map(|Reverse((t, _))| *t)
    }

    /// Requests under way.
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> usize {
        self.hosts.values().map(|h| h.in_flight).sum()
    }

    /// URLs waiting, over all hosts that are crawled.
    pub(crate) fn queued(&self) -> u64 {
        self.hosts
            .values()
            .filter(|h| h.skipped.is_none())
            .map(Host::waiting)
            .sum()
    }

    /// Hosts known.
    pub(crate) fn host_count(&self) -> usize {
        self.hosts.len()
    }

    /// Hosts whose time has come move from the heap to the ready, by their best page's cash.
    fn wake_due<S: QueueStore>(&mut self, store: &S, now: Instant) -> Result<(), S::Error> {
        while let Some(Reverse((at, id))) = self.heap.peek().copied() {
            if at > now {
                break;
            }
            self.heap.pop();
            let key = self.best_key(store, id)?;
            self.ready.push(ByCash(key, id));
        }
        Ok(())
    }

    /// The next thing to fetch from a host whose time has come, if any.
    pub(crate) fn next<S: QueueStore>(
        &mut self,
        store: &S,
        now: Instant,
    ) -> Result<Option<Dispatch>, S::Error> {
        self.wake_due(store, now)?;
        while let Some(ByCash(_, id)) = self.ready.pop() {
            let per_host = self.per_host;
            let Some(h) = self.hosts.get_mut(&id) else {
                continue;
            };
            h.place.unheap();
            if h.skipped.is_some()
                || h.blocked
                || h.in_flight >= per_host + h.lookahead
                || !h.has_queue()
            {
                continue;
            }
            if h.next_allowed > now {
                self.schedule(id);
                continue;
            }
            if self.by_address {
                match h.address {
                    servers::Address::Unknown if h.in_flight == 0 => {
                        h.address = servers::Address::Resolving;
                        h.in_flight += 1;
                        return Ok(Some(Dispatch::Resolve(id)));
                    }
                    servers::Address::Known(_) => {}
                    _ => continue,
                }
            }
            let ip = h.address.ip();
            if let Some(ip) = ip {
                match self.servers.gate(ip, id, now, per_host) {
                    servers::Gate::Go => {}
                    servers::Gate::Until(t) => {
                        h.next_allowed = h.next_allowed.max(t);
                        self.schedule(id);
                        continue;
                    }
                    servers::Gate::Full => continue,
                }
            }
            match &h.robots {
                RobotsState::Known(_, expires) if *expires > now => {}
                RobotsState::Fetching => continue,
                _ if h.in_flight > 0 => continue, // robots.txt again once what is under way ends
                _ => {
                    h.robots = RobotsState::Fetching;
                    h.in_flight += 1;
                    self.bench.admit_if_room(h);
                    self.started(ip);
                    return Ok(Some(Dispatch::Robots(id)));
                }
            }
            if h.coop_waiting() && h.in_flight >= per_host {
                // Served before pages, on a connection of its own: once one is free.
                continue;
            }
            let job = match h.coop.pop_front() {
                Some(job) => Some(job),
                None if h.in_flight < per_host => h.probe_due(),
                None => None,
            };
            if let Some(job) = job {
                h.in_flight += 1;
                self.bench.admit_if_room(h);
                self.started(ip);
                self.schedule(id);
                return Ok(Some(Dispatch::Coop(id, job)));
            }
            if h.holding {
                // Scheduled again when the hold ends.
                continue;
            }
            // Pages only on the workbench (robots.txt and cooperation requests go before, one
            // each, and take a place if one is free); waiting for room, the longest to crawl
            // first, so that the slowest hosts do not start last. A host's first page goes
            // without room as its robots.txt did (a first look, taking a place if one is
            // free): its answer is a second measure of the server's pace before the host is
            // put in line, and its links find the hosts it leads to.
            if h.handed == 0 {
                self.bench.admit_if_room(h);
            } else {
                let typical = self.bench.typical();
                if !self.bench.admit(h, h.crawl_seconds_left(typical)) {
                    continue;
                }
            }
            if h.buffer.is_empty() {
                self.refill(store, id)?;
            }
            let Some(h) = self.hosts.get_mut(&id) else {
                continue;
            };
            let Some(job) = h.buffer.pop_front() else {
                continue;
            };
            h.taken.insert(job.seq);
            h.handed += 1;
            h.in_flight += 1;
            if h.in_flight > per_host {
                self.surplus += 1;
            }
            self.started(ip);
            self.schedule(id);
            return Ok(Some(Dispatch::Page(job)));
        }
        Ok(None)
    }

    /// A request to a host ended; it may be contacted again no earlier than `not_before`.
    pub(crate) fn finished(&mut self, id: HostId, not_before: Instant) {
        let mut ip = None;
        let mut freed = false;
        if let Some(h) = self.hosts.get_mut(&id) {
            land(h, self.per_host, &mut self.surplus);
            h.next_allowed = h.next_allowed.max(not_before);
            ip = h.address.ip();
            freed = self.bench.release_if_done(h);
        }
        self.schedule(id);
        if freed {
            self.admit_waiting();
        }
        if let Some(ip) = ip {
            for waiting in self.servers.ended(ip, not_before) {
                self.schedule(waiting);
            }
        }
    }

    /// A request to a server started (politeness keyed by address).
    fn started(&mut self, ip: Option<std::net::IpAddr>) {
        if let Some(ip) = ip {
            self.servers.started(ip);
        }
    }

    /// A robots.txt fetch ended with these rules, valid until `expires`.
    pub(crate) fn robots_known(&mut self, id: HostId, rules: Rules, expires: Instant) {
        if let Some(h) = self.hosts.get_mut(&id) {
            h.robots = RobotsState::Known(rules, expires);
        }
    }

    /// A page handed out came back unfetched (its host's lane was halted): it is no longer
    /// under way, and goes back to its host's buffer in its place (ahead of what was not
    /// handed out, in the order handed out among those that came back).
    pub(crate) fn returned(&mut self, job: Queued) {
        let host = job.host;
        if let Some(h) = self.hosts.get_mut(&host) {
            land(h, self.per_host, &mut self.surplus);
            h.taken.remove(&job.seq);
            let at = h
                .buffer
                .iter()
                .position(|q| better(&job, q) == Ordering::Less)
                .unwrap_or(h.buffer.len());
            h.buffer.insert(at, job);
        }
        self.schedule(host);
    }

    /// How many requests a host may be handed beyond its connections (while its delay is
    /// zero, they wait on the fetching side and start as soon as one under way ends).
    pub(crate) fn set_lookahead(&mut self, id: HostId, n: usize) {
        if let Some(h) = self.hosts.get_mut(&id)
            && h.lookahead != n
        {
            h.lookahead = n;
            self.schedule(id);
        }
    }

    /// Requests handed out beyond their hosts' connections: they wait on the fetching side
    /// and do not count against the crawl's concurrency.
    pub(crate) fn surplus(&self) -> usize {
        self.surplus
    }

    /// A URL goes back to the front of its host's queue, to be tried again.
    pub(crate) fn requeue(&mut self, job: Queued) {
        let host = job.host;
        if let Some(h) = self.hosts.get_mut(&host) {
            h.taken.remove(&job.seq);
            h.buffer.push_front(job);
        }
        self.schedule(host);
    }

    /// The queue row of a URL found since the last saved batch, by fingerprint.
    pub(crate) fn unsaved_row(&self, fp: Fp) -> Option<Queued> {
        self.pending.iter().find(|u| u.fp == fp).map(|u| Queued {
            seq: u.seq,
            host: u.host,
            fp: u.fp,
            url: u.url.clone(),
            depth: u.depth,
            hops: u.hops,
            attempts: 0,
            priority: u.priority,
            revisit: false,
        })
    }

    /// Takes a queued row out of turn (its result is already known: a replayed record), so it
    /// is not handed out again.
    pub(crate) fn claim(&mut self, host: HostId, seq: i64) {
        let Some(h) = self.hosts.get_mut(&host) else {
            return;
        };
        if h.taken.contains(&seq) {
            return;
        }
        if let Some(pos) = h.buffer.iter().position(|q| q.seq == seq) {
            h.buffer.remove(pos);
        } else {
            if let Some(pos) = h.unsaved.iter().position(|q| q.seq == seq) {
                h.unsaved.remove(pos);
            }
            if let Some(pos) = h.ahead.iter().position(|q| q.seq == seq) {
                h.ahead.remove(pos);
            }
            h.queued = h.queued.saturating_sub(1);
        }
        h.taken.insert(seq);
    }

    /// Drops everything a host has waiting (it is given up on; the store records why).
    pub(crate) fn abandon(&mut self, id: HostId, reason: String) {
        if let Some(h) = self.hosts.get_mut(&id) {
            h.buffer.clear();
            h.unsaved.clear();
            h.reread();
            h.coop.clear();
            h.queued = 0;
            h.skipped = Some(reason);
            if self.bench.release_if_done(h) {
                self.admit_waiting();
            }
        }
    }

    /// The robots.txt rules of a host, if known and fresh.
    pub(crate) fn rules(&self, id: HostId, now: Instant) -> Option<&Rules> {
        match &self.hosts.get(&id)?.robots {
            RobotsState::Known(rules, expires) if *expires > now => Some(rules),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
