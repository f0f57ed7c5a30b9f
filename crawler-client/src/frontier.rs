//! The frontier: which URL to fetch next, and when.
//!
//! Every queued URL is in the crawl database; in memory are only the seen-set (8-byte
//! fingerprints), one small record per host, a short buffer of the next URLs of each host that
//! was visited, and the URLs found since the last saved batch. Hosts wait in a heap keyed by
//! the time they may next be contacted; within a host, URLs come best first by priority, then
//! in arrival order (all priorities are equal unless an importance measure sets them).

use crate::robots::Rules;
use crate::store::{NewUrl, Queued, Store, StoreError};
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::time::Instant;

/// URLs of a host read from the database at a time.
const BUFFER: usize = 16;

/// A host's robots.txt, as far as the frontier is concerned.
#[derive(Debug, Clone)]
pub enum RobotsState {
    /// Not fetched yet, or expired.
    Unknown,
    /// Being fetched.
    Fetching,
    /// Known until the instant.
    Known(Rules, Instant),
}

/// One host.
#[derive(Debug)]
pub struct Host {
    /// Database id.
    pub id: i64,
    /// `scheme://host[:port]`.
    pub origin: String,
    /// URLs waiting outside `buffer` (in the database or not saved yet).
    queued: u64,
    /// The next URLs, best first.
    buffer: VecDeque<Queued>,
    /// URLs found since the last saved batch that did not fit in the buffer.
    unsaved: Vec<Queued>,
    /// Rows handed out and not yet settled (fetching, or waiting for their batch to be saved).
    taken: HashSet<i64>,
    /// Requests under way.
    pub in_flight: usize,
    /// Earliest time of the next request.
    pub next_allowed: Instant,
    /// robots.txt.
    pub robots: RobotsState,
    /// Consecutive failures.
    pub failures: u32,
    /// Why the host is not crawled.
    pub skipped: Option<String>,
    in_heap: bool,
}

impl Host {
    fn new(id: i64, origin: String, queued: u64, now: Instant) -> Host {
        Host {
            id,
            origin,
            queued,
            buffer: VecDeque::new(),
            unsaved: Vec::new(),
            taken: HashSet::new(),
            in_flight: 0,
            next_allowed: now,
            robots: RobotsState::Unknown,
            failures: 0,
            skipped: None,
            in_heap: false,
        }
    }

    /// Whether it has URLs waiting.
    pub fn has_queue(&self) -> bool {
        !self.buffer.is_empty() || self.queued > 0
    }

    /// URLs waiting.
    pub fn waiting(&self) -> u64 {
        self.queued + self.buffer.len() as u64
    }
}

/// Best first: higher priority, then earlier arrival.
fn better(a: &Queued, b: &Queued) -> Ordering {
    b.priority
        .partial_cmp(&a.priority)
        .unwrap_or(Ordering::Equal)
        .then(a.seq.cmp(&b.seq))
}

/// What to do next.
#[derive(Debug, Clone)]
pub enum Dispatch {
    /// Fetch the host's robots.txt first.
    Robots(i64),
    /// Fetch a page.
    Page(Queued),
}

/// The frontier.
pub struct Frontier {
    /// The crawl database (queue and seen-set on disk).
    pub store: Store,
    hosts: HashMap<i64, Host>,
    by_origin: HashMap<String, i64>,
    heap: BinaryHeap<Reverse<(Instant, i64)>>,
    seen: HashSet<u64>,
    next_seq: i64,
    pending: Vec<NewUrl>,
    with_unsaved: HashSet<i64>,
    per_host: usize,
}

impl Frontier {
    /// The frontier over `store`'s queue, seen-set and hosts. `host_state` gives each stored
    /// host its robots.txt state, skip reason and first allowed time.
    pub fn load(
        store: Store,
        per_host: usize,
        mut host_state: impl FnMut(&crate::store::HostRecord) -> (RobotsState, Option<String>, Instant),
    ) -> Result<Self, StoreError> {
        let mut seen = HashSet::new();
        store.load_seen(&mut seen)?;
        let queued: HashMap<i64, u64> = store.queued_per_host()?.into_iter().collect();
        let next_seq = store.max_queue_seq()? + 1;
        let mut f = Frontier {
            hosts: HashMap::new(),
            by_origin: HashMap::new(),
            heap: BinaryHeap::new(),
            seen,
            next_seq,
            pending: Vec::new(),
            with_unsaved: HashSet::new(),
            per_host: per_host.max(1),
            store,
        };
        let now = Instant::now();
        for rec in f.store.hosts()? {
            let mut host = Host::new(
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
            f.by_origin.insert(rec.origin, rec.id);
            f.hosts.insert(rec.id, host);
            f.schedule(rec.id);
        }
        Ok(f)
    }

    /// The host record.
    pub fn host(&self, id: i64) -> Option<&Host> {
        self.hosts.get(&id)
    }

    /// The host record, to change (call [`Frontier::schedule`] after).
    pub fn host_mut(&mut self, id: i64) -> Option<&mut Host> {
        self.hosts.get_mut(&id)
    }

    /// The id of the host with `origin`, added if new.
    pub fn host_for(&mut self, origin: &str) -> Result<i64, StoreError> {
        if let Some(id) = self.by_origin.get(origin) {
            return Ok(*id);
        }
        let id = self.store.host_id(origin)?;
        self.by_origin.insert(origin.to_string(), id);
        self.hosts
            .insert(id, Host::new(id, origin.to_string(), 0, Instant::now()));
        Ok(id)
    }

    /// Whether a URL with this fingerprint was ever queued.
    pub fn seen(&self, fp: u64) -> bool {
        self.seen.contains(&fp)
    }

    /// Fingerprints in the seen-set.
    pub fn seen_len(&self) -> usize {
        self.seen.len()
    }

    /// Queues a URL of a known host unless already seen; returns whether it was new.
    pub fn push(
        &mut self,
        host: i64,
        url: String,
        fp: u64,
        depth: u32,
        hops: u32,
        priority: f64,
    ) -> bool {
        let Some(h) = self.hosts.get_mut(&host) else {
            return false;
        };
        if !self.seen.insert(fp) {
            return false;
        }
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
            revisit: false,
        };
        self.pending.push(NewUrl {
            seq,
            host,
            url: row.url.clone(),
            fp,
            depth,
            hops,
            priority,
        });
        // Straight into the buffer while nothing else waits outside it, so the order stays
        // exact and a new host need not wait for the batch to be saved.
        if h.queued == 0 && h.buffer.len() < BUFFER {
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
        true
    }

    /// Takes the new URLs to save in the next batch. Call [`Frontier::saved`] once it is.
    pub fn drain_pending(&mut self) -> Vec<NewUrl> {
        std::mem::take(&mut self.pending)
    }

    /// The batch holding the drained URLs and these settled rows (`(host, seq)`) was saved.
    pub fn saved(&mut self, settled: &[(i64, i64)]) {
        for id in self.with_unsaved.drain() {
            if let Some(h) = self.hosts.get_mut(&id) {
                h.unsaved.clear();
            }
        }
        for (host, seq) in settled {
            if let Some(h) = self.hosts.get_mut(host) {
                h.taken.remove(seq);
            }
        }
    }

    /// Puts a host in the heap if it has work and room and is not already there.
    pub fn schedule(&mut self, id: i64) {
        let Some(h) = self.hosts.get_mut(&id) else {
            return;
        };
        if h.in_heap || h.skipped.is_some() || !h.has_queue() || h.in_flight >= self.per_host {
            return;
        }
        if matches!(h.robots, RobotsState::Fetching) {
            return;
        }
        h.in_heap = true;
        self.heap.push(Reverse((h.next_allowed, id)));
    }

    /// When the next host becomes eligible.
    pub fn next_wakeup(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((t, _))| *t)
    }

    /// Whether any host has work left (queued or under way).
    pub fn has_work(&self) -> bool {
        self.hosts
            .values()
            .any(|h| h.in_flight > 0 || (h.skipped.is_none() && h.has_queue()))
    }

    /// Requests under way.
    pub fn in_flight(&self) -> usize {
        self.hosts.values().map(|h| h.in_flight).sum()
    }

    /// Hosts with work.
    pub fn active_hosts(&self) -> usize {
        self.hosts
            .values()
            .filter(|h| h.in_flight > 0 || (h.skipped.is_none() && h.has_queue()))
            .count()
    }

    /// URLs waiting, over all hosts that are crawled.
    pub fn queued(&self) -> u64 {
        self.hosts
            .values()
            .filter(|h| h.skipped.is_none())
            .map(Host::waiting)
            .sum()
    }

    /// Hosts known.
    pub fn host_count(&self) -> usize {
        self.hosts.len()
    }

    /// The next thing to fetch from a host whose time has come, if any.
    pub fn next(&mut self, now: Instant) -> Result<Option<Dispatch>, StoreError> {
        while let Some(Reverse((at, id))) = self.heap.peek().copied() {
            if at > now {
                return Ok(None);
            }
            self.heap.pop();
            let per_host = self.per_host;
            let Some(h) = self.hosts.get_mut(&id) else {
                continue;
            };
            h.in_heap = false;
            if h.skipped.is_some() || h.in_flight >= per_host || !h.has_queue() {
                continue;
            }
            if h.next_allowed > now {
                self.schedule(id);
                continue;
            }
            match &h.robots {
                RobotsState::Known(_, expires) if *expires > now => {}
                RobotsState::Fetching => continue,
                _ if h.in_flight > 0 => continue, // robots.txt again once what is under way ends
                _ => {
                    h.robots = RobotsState::Fetching;
                    h.in_flight += 1;
                    return Ok(Some(Dispatch::Robots(id)));
                }
            }
            if h.buffer.is_empty() {
                self.refill(id)?;
            }
            let Some(h) = self.hosts.get_mut(&id) else {
                continue;
            };
            let Some(job) = h.buffer.pop_front() else {
                continue;
            };
            h.taken.insert(job.seq);
            h.in_flight += 1;
            self.schedule(id);
            return Ok(Some(Dispatch::Page(job)));
        }
        Ok(None)
    }

    fn refill(&mut self, id: i64) -> Result<(), StoreError> {
        let Some(h) = self.hosts.get_mut(&id) else {
            return Ok(());
        };
        let rows = self.store.next_for_host(id, BUFFER, &h.taken)?;
        let mut rows: Vec<Queued> = rows;
        if rows.len() < BUFFER && !h.unsaved.is_empty() {
            h.unsaved.sort_by(better);
            let take = (BUFFER - rows.len()).min(h.unsaved.len());
            rows.extend(h.unsaved.drain(..take));
        }
        if rows.is_empty() {
            // The count drifted (a row given up by another path): nothing is left.
            h.queued = 0;
        } else {
            h.queued = h.queued.saturating_sub(rows.len() as u64);
        }
        h.buffer.extend(rows);
        Ok(())
    }

    /// A request to a host ended; it may be contacted again no earlier than `not_before`.
    pub fn finished(&mut self, id: i64, not_before: Instant) {
        if let Some(h) = self.hosts.get_mut(&id) {
            h.in_flight = h.in_flight.saturating_sub(1);
            h.next_allowed = h.next_allowed.max(not_before);
        }
        self.schedule(id);
    }

    /// A robots.txt fetch ended with these rules, valid until `expires`.
    pub fn robots_known(&mut self, id: i64, rules: Rules, expires: Instant) {
        if let Some(h) = self.hosts.get_mut(&id) {
            h.robots = RobotsState::Known(rules, expires);
        }
    }

    /// A URL goes back to the front of its host's queue, to be tried again.
    pub fn requeue(&mut self, job: Queued) {
        let host = job.host;
        if let Some(h) = self.hosts.get_mut(&host) {
            h.taken.remove(&job.seq);
            h.buffer.push_front(job);
        }
        self.schedule(host);
    }

    /// The queue row of a URL found since the last saved batch, by fingerprint.
    pub fn unsaved_row(&self, fp: u64) -> Option<Queued> {
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
    pub fn claim(&mut self, host: i64, seq: i64) {
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
            h.queued = h.queued.saturating_sub(1);
        }
        h.taken.insert(seq);
    }

    /// Drops everything a host has waiting (it is given up on; the store records why).
    pub fn abandon(&mut self, id: i64, reason: String) {
        if let Some(h) = self.hosts.get_mut(&id) {
            h.buffer.clear();
            h.unsaved.clear();
            h.queued = 0;
            h.skipped = Some(reason);
        }
    }

    /// The robots.txt rules of a host, if known and fresh.
    pub fn rules(&self, id: i64, now: Instant) -> Option<&Rules> {
        match &self.hosts.get(&id)?.robots {
            RobotsState::Known(rules, expires) if *expires > now => Some(rules),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Batch;
    use std::time::Duration;

    fn frontier(dir: &std::path::Path, per_host: usize) -> Frontier {
        let store = Store::open(dir).unwrap();
        Frontier::load(store, per_host, |_| {
            (RobotsState::Unknown, None, Instant::now())
        })
        .unwrap()
    }

    fn save(f: &mut Frontier, settled: &[(i64, i64)], done: Vec<i64>) {
        let batch = Batch {
            new_urls: f.drain_pending(),
            done,
            ..Default::default()
        };
        f.store.commit(&batch).unwrap();
        f.saved(settled);
    }

    fn page(d: Option<Dispatch>) -> Queued {
        match d {
            Some(Dispatch::Page(q)) => q,
            other => panic!("expected a page, got {other:?}"),
        }
    }

    #[test]
    fn robots_first_then_fifo_with_politeness_and_spill_to_disk() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = frontier(dir.path(), 1);
        let h = f.host_for("http://e.com").unwrap();
        for i in 0..40 {
            let url = format!("http://e.com/{i}");
            assert!(f.push(h, url.clone(), i, 0, 0, 0.0));
            assert!(!f.push(h, url, i, 0, 0, 0.0), "seen");
        }
        assert_eq!(f.queued(), 40);
        let now = Instant::now();
        assert!(matches!(f.next(now).unwrap(), Some(Dispatch::Robots(id)) if id == h));
        assert!(
            f.next(now).unwrap().is_none(),
            "one connection, busy with robots.txt"
        );
        f.robots_known(h, Rules::AllowAll, now + Duration::from_secs(3600));
        f.finished(h, now);
        // Half the URLs are saved before they are needed, half are not: the order holds.
        save(&mut f, &[], vec![]);
        let mut got = Vec::new();
        let mut settled = Vec::new();
        for i in 0..40 {
            let t = Instant::now();
            let q = page(f.next(t).unwrap());
            assert!(f.next(t).unwrap().is_none(), "one at a time");
            got.push(q.url.clone());
            settled.push((h, q.seq));
            f.finished(h, t);
            if i == 20 {
                for j in 40..45 {
                    f.push(h, format!("http://e.com/{j}"), j, 1, 0, 0.0);
                }
            }
            if i % 7 == 0 {
                let done: Vec<i64> = settled.iter().map(|s| s.1).collect();
                save(&mut f, &settled, done);
                settled.clear();
            }
        }
        let expected: Vec<String> = (0..40).map(|i| format!("http://e.com/{i}")).collect();
        assert_eq!(got, expected);
        let mut rest = Vec::new();
        for _ in 0..5 {
            let q = page(f.next(Instant::now()).unwrap());
            f.finished(h, Instant::now());
            rest.push(q.url);
        }
        assert_eq!(
            rest,
            (40..45)
                .map(|i| format!("http://e.com/{i}"))
                .collect::<Vec<_>>()
        );
        assert!(f.next(Instant::now()).unwrap().is_none());
    }

    #[test]
    fn a_host_waits_for_its_delay_and_others_go_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = frontier(dir.path(), 1);
        let a = f.host_for("http://a.com").unwrap();
        let b = f.host_for("http://b.com").unwrap();
        let far = Instant::now() + Duration::from_secs(3600);
        for (h, n) in [(a, 0u64), (b, 100)] {
            f.push(h, format!("x{n}"), n, 0, 0, 0.0);
            f.push(h, format!("y{n}"), n + 1, 0, 0, 0.0);
            f.robots_known(h, Rules::AllowAll, far);
        }
        let now = Instant::now();
        let first = page(f.next(now).unwrap());
        let second = page(f.next(now).unwrap());
        assert_ne!(first.host, second.host);
        f.finished(a, now + Duration::from_secs(10));
        f.finished(b, now);
        let third = page(f.next(now).unwrap());
        assert_eq!(third.host, b, "a must wait 10 s");
        f.finished(b, now);
        assert!(f.next(now).unwrap().is_none());
        assert_eq!(f.next_wakeup(), Some(now + Duration::from_secs(10)));
        assert_eq!(page(f.next(now + Duration::from_secs(10)).unwrap()).host, a);
    }

    #[test]
    fn a_retried_url_is_handed_out_again_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = frontier(dir.path(), 1);
        let h = f.host_for("http://e.com").unwrap();
        for i in 0..20 {
            f.push(h, format!("http://e.com/{i}"), i, 0, 0, 0.0);
        }
        f.robots_known(h, Rules::AllowAll, Instant::now() + Duration::from_secs(60));
        save(&mut f, &[], vec![]);
        let first = page(f.next(Instant::now()).unwrap());
        f.finished(h, Instant::now());
        f.requeue(first.clone());
        let again = page(f.next(Instant::now()).unwrap());
        f.finished(h, Instant::now());
        assert_eq!(again.seq, first.seq, "a retry goes first");
        // The save that records the retry's attempt count settles nothing: the row is taken
        // again and must not come back from the database while it is.
        save(&mut f, &[], vec![]);
        let mut order = vec![again.seq];
        while let Some(d) = f.next(Instant::now()).unwrap() {
            let q = page(Some(d));
            order.push(q.seq);
            f.finished(h, Instant::now());
        }
        assert_eq!(order.len(), 20, "{order:?}");
        assert_eq!(
            order.iter().filter(|s| **s == first.seq).count(),
            1,
            "{order:?}"
        );
    }

    #[test]
    fn the_queue_survives_a_reload_and_the_seen_set_with_it() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut f = frontier(dir.path(), 2);
            let h = f.host_for("http://e.com").unwrap();
            for i in 0..30 {
                f.push(h, format!("http://e.com/{i}"), i, 0, 0, 0.0);
            }
            save(&mut f, &[], vec![]);
        }
        let mut f = frontier(dir.path(), 2);
        let h = f.host_for("http://e.com").unwrap();
        assert_eq!(f.queued(), 30);
        assert!(!f.push(h, "http://e.com/3".into(), 3, 0, 0, 0.0));
        assert!(f.push(h, "http://e.com/new".into(), 999, 0, 0, 0.0));
        f.robots_known(h, Rules::AllowAll, Instant::now() + Duration::from_secs(60));
        let now = Instant::now();
        let a = page(f.next(now).unwrap());
        let b = page(f.next(now).unwrap());
        assert_eq!(
            (a.url.as_str(), b.url.as_str()),
            ("http://e.com/0", "http://e.com/1")
        );
        assert!(f.next(now).unwrap().is_none(), "two connections");
        assert!(b.seq > a.seq);
        f.abandon(h, "gone".into());
        assert_eq!(f.queued(), 0);
    }
}
