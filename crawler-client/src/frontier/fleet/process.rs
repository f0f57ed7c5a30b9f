//! One process of a fleet: what it holds of the shared frontier and how it takes and gives
//! back work. A process works on a host only while it holds the host's lease (one holder at a
//! time), so the host's politeness, its connection limit and its robots.txt are kept by one
//! process at a time and handed over with the lease: a lease given back carries the host's
//! next allowed time, one that expires (its holder died) imposes a delay, and the new holder
//! first puts back every row the old one had taken. A process holds about its share of the
//! hosts with work (the hosts listed, divided by the processes alive), so that processes
//! joining later get theirs as hosts change hands.

use super::FleetError;
use super::leases::{Grant, HostLeases};
use super::members::{Heartbeat, Look, Members};
use super::put_writer::PutWriter;
use super::queue::{Put, PutDone, Settle, SharedQueue, Taken};
use crate::frontier::shared::{Claimed, Saved, SharedFrontier, TrackedPage};
use crate::ids::{Fp, HostId};
use crate::state::{NewUrl, Queued};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Rows stay taken until settled or reclaimed by the host's next holder: their own lease only
/// bounds what a holder that lost its host lease unnoticed could keep.
const ROW_LEASE: Duration = Duration::from_secs(24 * 3600);

/// URLs of a host held here taken as they were offered, at most: beyond, what this process
/// finds for its hosts waits in the shared queue like anything else (memory stays bounded,
/// and a URL another process offered with more cash is not kept waiting long).
const HELD_PER_HOST: usize = 512;

/// Fingerprints of pages this process fetched (or recorded as forbidden when found),
/// remembered at most: cash owed to one of them would find it no longer queued, so it is not
/// sent. Forgotten all at once when full.
const DONE_REMEMBERED: usize = 1 << 20;

/// How often a process looks for hosts to take, at most, while it holds fewer than its share.
const CLAIM_EVERY: Duration = Duration::from_millis(250);

/// How often a process that holds its share looks whether its share changed (hosts found,
/// processes come or gone), at most: the thread writing its batches looks after each.
const SHARE_EVERY: Duration = Duration::from_secs(1);

/// How often a process asks whether the others may still bring work, at most.
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// How long a process leaves a host another holds before asking for it again: the holder
/// renews its lease every 10 s and keeps the host while it has work, so asking sooner is a
/// script call that answers "busy" (at 3,000 hosts the fleet's script calls fell from 3.11
/// a page, asking every 2 s, to 2.53).
const BUSY_RETRY: Duration = Duration::from_secs(10);

struct HostLease {
    token: String,
    renew_at: Instant,
}

/// This process's part of a fleet.
pub(crate) struct FleetProcess {
    name: String,
    crawl: String,
    queue: SharedQueue,
    leases: HostLeases,
    members: Members,
    robots_ttl: Duration,
    expired_delay: Duration,
    lease: Duration,
    held: HashMap<HostId, HostLease>,
    taken: HashMap<(HostId, i64), Taken>,
    not_before: HashMap<HostId, Instant>,
    /// This process's own last look at the fleet (the writing thread's is with it), and when.
    looked: Option<(Instant, Look)>,
    /// The look the last claim of hosts was made on, by its time: one claim per look.
    claimed_with: Option<Instant>,
    /// This process's share of the hosts with work, as last computed.
    share: usize,
    /// Saved batches' writes, made while the crawl goes on.
    writer: PutWriter,
    /// Per host, the batches with URLs offered to it still being written.
    awaiting: HashMap<HostId, usize>,
    /// URLs new per host in batches written, not yet told to the crawl loop.
    confirmed: Vec<(HostId, usize)>,
    /// Per host held, URLs taken for this process as they were offered, not yet handed to
    /// the crawl loop.
    held_rows: HashMap<HostId, Vec<Taken>>,
    /// Pages fetched here (see [`DONE_REMEMBERED`]).
    done_here: std::collections::HashSet<Fp>,
    /// Saved batches sent, their host parts, the parts only paying cash, and pages settled.
    sent: [u64; 4],
}

fn tracked_key(crawl: &str, host: HostId) -> String {
    format!("{}:tracked", super::tag(crawl, &host.to_string()))
}

/// `visited \t depth \t rate \t url` as [`SharedFrontier::put_tracked`] writes it.
fn parse_tracked(fp: &str, value: &str) -> Option<TrackedPage> {
    let mut f = value.splitn(4, '\t');
    let visited = f.next()?.parse().ok()?;
    let depth = f.next()?.parse().ok()?;
    let rate = f.next()?.parse().ok();
    Some(TrackedPage {
        fp: Fp(fp.parse::<i64>().ok()? as u64),
        visited,
        depth,
        rate,
        url: f.next()?.to_string(),
    })
}

fn robots_key(crawl: &str, host: HostId) -> String {
    format!("{}:robots", super::tag(crawl, &host.to_string()))
}

impl FleetProcess {
    /// Joins crawl `crawl` at `url` as process `name` in its run `run` (unique across
    /// restarts: a restarted process's lease tokens never match its last run's); `robots_ttl` is how long a robots.txt
    /// read by one process serves the others, `expired_delay` the wait after a lease whose
    /// holder died, `lease` how long a host lease lasts unrenewed. A call waiting for an
    /// unreachable Redis gives up once `stop` is set.
    pub(crate) fn join(
        url: &str,
        crawl: &str,
        (name, run): (&str, &str),
        (robots_ttl, expired_delay, lease): (Duration, Duration, Duration),
        stop: Arc<AtomicBool>,
    ) -> Result<FleetProcess, FleetError> {
        let mut queue = SharedQueue::connect(url, crawl, name)?;
        let mut leases = HostLeases::connect(url, crawl, run)?;
        let mut members = Members::connect(url, crawl)?;
        let mut writes = SharedQueue::connect(url, crawl, name)?;
        let mut releases = HostLeases::connect(url, crawl, run)?;
        for link in [
            queue.link(),
            leases.link(),
            members.link(),
            writes.link(),
            releases.link(),
        ] {
            link.stop_on(stop.clone());
        }
        Ok(FleetProcess {
            name: name.to_string(),
            crawl: crawl.to_string(),
            queue,
            leases,
            members,
            robots_ttl,
            expired_delay,
            lease: lease.max(Duration::from_secs(1)),
            held: HashMap::new(),
            taken: HashMap::new(),
            not_before: HashMap::new(),
            looked: None,
            claimed_with: None,
            share: 1,
            writer: PutWriter::start(writes, releases)?,
            awaiting: HashMap::new(),
            confirmed: Vec::new(),
            held_rows: HashMap::new(),
            done_here: Default::default(),
            sent: [0; 4],
        })
    }

    /// The latest look at the fleet, the writing thread's or this process's own.
    fn latest(&self) -> Option<(Instant, &Look)> {
        [self.writer.look(), self.looked.as_ref()]
            .into_iter()
            .flatten()
            .max_by_key(|(at, _)| *at)
            .map(|(at, look)| (*at, look))
    }

    /// The latest look at the fleet when it is younger than `within`; else one made now.
    fn look_since(
        &mut self,
        now: Instant,
        within: Duration,
    ) -> Result<(Instant, &Look), FleetError> {
        if self.latest().is_none_or(|(at, _)| now >= at + within) {
            let look = self.members.look()?;
            self.looked = Some((Instant::now(), look));
        }
        self.latest()
            .ok_or_else(|| FleetError::Thread("no look at the fleet was kept".into()))
    }

    /// Takes note of what written batches did.
    fn note(&mut self, done: Vec<(HostId, PutDone)>) -> Result<(), FleetError> {
        let mut strays = Vec::new();
        for (host, d) in done {
            if !d.held.is_empty() {
                match self.held.contains_key(&host) {
                    true => self.held_rows.entry(host).or_default().extend(d.held),
                    // The host was let go while the batch was written: what it took for this
                    // process goes back to the queue, for the host's next holder.
                    false => strays.push((host, d.held)),
                }
            }
            if d.offered > 0 {
                if let Some(n) = self.awaiting.get_mut(&host) {
                    *n -= 1;
                    if *n == 0 {
                        self.awaiting.remove(&host);
                    }
                }
                self.confirmed.push((host, d.queued));
            }
        }
        if !strays.is_empty() {
            self.queue.give_back(strays)?;
        }
        Ok(())
    }

    /// Forgets what this process held of a host it no longer holds.
    fn forget(&mut self, host: HostId) {
        self.taken.retain(|(h, _), _| *h != host);
        self.held_rows.remove(&host);
    }

    /// Waits until every batch handed over is written: before a host is given back (its
    /// settled rows must not come back with it) and before asking what work is left.
    fn settle_writes(&mut self) -> Result<(), FleetError> {
        let done = self.writer.wait()?;
        self.note(done)
    }

    /// A host whose lease was just granted: its rows back from whoever held them, its
    /// robots.txt if another process read it. None when there is nothing to do there.
    fn start_on(&mut self, host: HostId) -> Result<Option<Claimed>, FleetError> {
        // Batches still being written may take rows for this host (if this process held it
        // before): they land first, and go back with the rest.
        self.settle_writes()?;
        let back = self.queue.reclaim(host)?;
        self.held_rows.remove(&host);
        if back > 0 {
            tracing::info!("host {host}: {back} URLs taken by a process gone are queued again");
        }
        let Some(origin) = self.queue.origin(host)? else {
            return Ok(None);
        };
        if let Some(reason) = self.queue.skipped(host)? {
            // URLs of it found after it was given up were queued for it (the offer cannot
            // read the crawl's list of hosts given up in the host's own slot): they go as its
            // queue went, or the fleet would wait for them forever.
            self.queue.drop_host(host, &reason)?;
            return Ok(None);
        }
        let queued = self.queue.queued(host)?;
        let key = robots_key(&self.crawl, host);
        let raw: Option<Vec<u8>> = self
            .queue
            .link()
            .run(|con| redis::cmd("GET").arg(&key).query(con))?;
        let robots = raw.and_then(|r| parse_robots(&r));
        let key = tracked_key(&self.crawl, host);
        let tracked: Vec<(String, String)> = self
            .queue
            .link()
            .run(|con| redis::cmd("HGETALL").arg(&key).query(con))?;
        Ok(Some(Claimed {
            host,
            origin,
            queued,
            robots,
            tracked: tracked
                .iter()
                .filter_map(|(fp, v)| parse_tracked(fp, v))
                .collect(),
        }))
    }
}

impl SharedFrontier for FleetProcess {
    fn queue_key(&mut self, origin: &str) -> Result<HostId, FleetError> {
        self.queue.host_id(origin)
    }

    fn get_urls(&mut self, host: HostId, n: usize) -> Result<Vec<Queued>, FleetError> {
        if !self.held.contains_key(&host) {
            return Ok(Vec::new());
        }
        let rows = match self.held_rows.get_mut(&host) {
            Some(rows) if !rows.is_empty() => {
                rows.sort_by(|a, b| b.job.priority.total_cmp(&a.job.priority));
                rows.drain(..n.min(rows.len())).collect()
            }
            _ => self.queue.take(host, n, ROW_LEASE)?,
        };
        Ok(rows
            .into_iter()
            .map(|t| {
                let job = t.job.clone();
                self.taken.insert((host, job.seq), t);
                job
            })
            .collect())
    }

    fn put_saved(&mut self, saved: Saved) -> Result<Vec<(HostId, usize)>, FleetError> {
        let mut put = Put::default();
        let mut by_host: HashMap<HostId, Vec<NewUrl>> = HashMap::new();
        for u in saved.discovered {
            by_host.entry(u.host).or_default().push(u);
        }
        for (host, urls) in by_host {
            // What this process finds for a host it holds is taken for it as it is offered:
            // it would be taken next, and a take costs Redis about what the offer does.
            if self.held.contains_key(&host)
                && self.held_rows.get(&host).map_or(0, Vec::len) < HELD_PER_HOST
            {
                put.hold(host, ROW_LEASE);
            }
            put.offer(host, urls);
        }
        // A link robots.txt forbids was recorded where it was found, as a single process
        // records it, and never reaches Redis: marking it seen there cost a row and its
        // bucket's work per link for one thing only, that another process finding it
        // without the host's robots.txt would not queue it, and that process's taker checks
        // robots.txt before any request anyway. Cash owed to it would find nothing to pay.
        self.done_here.extend(&saved.forbidden);
        for (host, shares) in saved.cash {
            let owed: Vec<(Fp, f64)> = shares
                .into_iter()
                .filter(|(fp, _)| !self.done_here.contains(fp))
                .collect();
            if !owed.is_empty() {
                put.deposit(host, owed);
            }
        }
        for (host, pages) in saved.tracked {
            if pages.is_empty() {
                continue;
            }
            let mut cmd = redis::cmd("HSET");
            cmd.arg(tracked_key(&self.crawl, host));
            for p in pages {
                let rate = p.rate.map_or(String::new(), |r| r.to_string());
                cmd.arg((p.fp.0 as i64).to_string())
                    .arg(format!("{}\t{}\t{}\t{}", p.visited, p.depth, rate, p.url));
            }
            put.cmd(cmd);
        }
        let mut done: HashMap<HostId, Vec<Taken>> = HashMap::new();
        if self.done_here.len() >= DONE_REMEMBERED {
            self.done_here.clear();
        }
        for (host, seq) in saved.done {
            if let Some(t) = self.taken.remove(&(host, seq)) {
                // A revisit queued again is paid once more; only a first visit is remembered.
                if !t.job.revisit {
                    self.done_here.insert(t.job.fp);
                }
                done.entry(host).or_default().push(t);
            }
        }
        let done_rows: usize = done.values().map(Vec::len).sum();
        for (host, rows) in done {
            put.settle(host, &rows, Settle::Done);
        }
        let (parts, alone) = put.parts();
        for (n, add) in self.sent.iter_mut().zip([1, parts, alone, done_rows]) {
            *n += add as u64;
        }
        for host in put.offered() {
            *self.awaiting.entry(host).or_default() += 1;
        }
        let done = self.writer.send(put)?;
        self.note(done)?;
        Ok(std::mem::take(&mut self.confirmed))
    }

    fn written(&mut self, wait: bool) -> Result<Vec<(HostId, usize)>, FleetError> {
        let done = match wait {
            true => self.writer.wait()?,
            false => self.writer.written()?,
        };
        self.note(done)?;
        Ok(std::mem::take(&mut self.confirmed))
    }

    fn awaiting(&self, host: HostId) -> bool {
        self.awaiting.contains_key(&host)
    }

    fn keep(&mut self, host: HostId, now: Instant) -> Result<bool, FleetError> {
        // The clock at the call, not the caller's: the caller may have waited on Redis since.
        let now = now.max(Instant::now());
        let Some(h) = self.held.get(&host) else {
            return Ok(false);
        };
        if h.renew_at > now {
            return Ok(true);
        }
        let token = h.token.clone();
        if self.leases.renew(&host.to_string(), &token, self.lease)? {
            if let Some(h) = self.held.get_mut(&host) {
                h.renew_at = now + self.lease / 3;
            }
            return Ok(true);
        }
        tracing::warn!("lost the lease of host {host}: another process has it now");
        self.held.remove(&host);
        self.forget(host);
        Ok(false)
    }

    fn renew_all(&mut self, now: Instant) -> Result<Vec<HostId>, FleetError> {
        if !self.held.values().any(|h| h.renew_at <= now) {
            return Ok(Vec::new());
        }
        // Once one is due, those due within the next sixth of a lease go with it: a round
        // trip renews them all, and their times gather so that the next one does too.
        let soon = now + self.lease / 6;
        let (due, keys): (Vec<HostId>, Vec<(String, String)>) = self
            .held
            .iter()
            .filter(|(_, h)| h.renew_at <= soon)
            .map(|(id, h)| (*id, (id.to_string(), h.token.clone())))
            .unzip();
        let kept = self.leases.renew_many(&keys, self.lease)?;
        let mut lost = Vec::new();
        for (host, kept) in due.into_iter().zip(kept) {
            if kept {
                if let Some(h) = self.held.get_mut(&host) {
                    h.renew_at = now + self.lease / 3;
                }
                continue;
            }
            tracing::warn!("lost the lease of host {host}: another process has it now");
            self.held.remove(&host);
            self.forget(host);
            lost.push(host);
        }
        Ok(lost)
    }

    fn excess(&self) -> usize {
        self.held.len().saturating_sub(self.share + 1)
    }

    fn get_queues(&mut self, cap: usize, now: Instant) -> Result<Vec<Claimed>, FleetError> {
        let within = match self.held.len() >= self.share {
            true => SHARE_EVERY,
            false => CLAIM_EVERY,
        };
        let (at, look) = self.look_since(now, within)?;
        let (active, alive) = (look.active as usize, look.alive().max(1));
        if self.claimed_with == Some(at) {
            return Ok(Vec::new());
        }
        self.claimed_with = Some(at);
        self.share = active.div_ceil(alive).clamp(1, cap.max(1));
        let want = self.share;
        if self.held.len() >= want {
            return Ok(Vec::new());
        }
        self.not_before.retain(|_, t| *t > now);
        let candidates = self.queue.active(4 * want + 16)?;
        let mut out = Vec::new();
        for host in candidates {
            if self.held.len() >= want {
                break;
            }
            if self.held.contains_key(&host) || self.not_before.contains_key(&host) {
                continue;
            }
            match self
                .leases
                .acquire(&host.to_string(), 1, self.lease, self.expired_delay)?
            {
                Grant::Granted(token) => {
                    self.held.insert(
                        host,
                        HostLease {
                            token,
                            renew_at: now + self.lease / 3,
                        },
                    );
                    match self.start_on(host)? {
                        Some(c) => out.push(c),
                        None => {
                            self.release(host, Vec::new(), Duration::ZERO)?;
                        }
                    }
                }
                Grant::Wait(d) => {
                    self.not_before.insert(host, now + d);
                }
                Grant::Busy => {
                    self.not_before.insert(host, now + BUSY_RETRY);
                }
            }
        }
        Ok(out)
    }

    fn share_robots(
        &mut self,
        host: HostId,
        status: u16,
        body: &[u8],
        at: i64,
    ) -> Result<(), FleetError> {
        let key = robots_key(&self.crawl, host);
        let mut value = format!("{status}\t{at}\t").into_bytes();
        value.extend_from_slice(body);
        let ttl = self.robots_ttl.as_millis().max(1) as u64;
        self.queue.link().run(|con| {
            redis::cmd("SET")
                .arg(&key)
                .arg(&value)
                .arg("PX")
                .arg(ttl)
                .query::<()>(con)
        })
    }

    fn release(
        &mut self,
        host: HostId,
        unsent: Vec<Queued>,
        delay: Duration,
    ) -> Result<(), FleetError> {
        // Everything taken of the host goes back: the rows in memory, and any a call whose
        // reply was lost (Redis went away mid-call) took without this process knowing. The
        // writing thread does it after the batches handed to it before.
        for job in unsent {
            self.taken.remove(&(host, job.seq));
        }
        self.forget(host);
        let token = self.held.remove(&host).map(|h| h.token);
        let done = self.writer.release(host, token, Instant::now() + delay)?;
        self.note(done)
    }

    fn hand_over(
        &mut self,
        host: HostId,
        unsent: Vec<Queued>,
        delay: Duration,
        now: Instant,
    ) -> Result<(), FleetError> {
        self.release(host, unsent, delay)?;
        self.not_before.insert(host, now + Duration::from_secs(5));
        Ok(())
    }

    fn delete_queue(&mut self, host: HostId, reason: &str) -> Result<(), FleetError> {
        self.settle_writes()?;
        self.forget(host);
        self.queue.drop_host(host, reason)?;
        if let Some(h) = self.held.remove(&host) {
            self.leases
                .release(&host.to_string(), &h.token, Duration::ZERO)?;
        }
        Ok(())
    }

    fn work_elsewhere(&mut self, now: Instant) -> Result<bool, FleetError> {
        // This process's own offers count among the work listed: once they are written, the
        // writing thread's look is the latest.
        self.settle_writes()?;
        let (held, name) = (self.held.len(), self.name.clone());
        let (_, look) = self.look_since(now, LOOK_EVERY)?;
        Ok(look.active as usize > held || look.others_busy(&name))
    }

    fn beat(&mut self, beat: &Heartbeat) -> Result<(), FleetError> {
        let beat = Heartbeat {
            hosts: self.held.len(),
            taken: self.taken.len() + self.held_rows.values().map(Vec::len).sum::<usize>(),
            ..beat.clone()
        };
        let done = self.writer.beat(&self.name, beat)?;
        self.note(done)
    }

    fn server_lease(
        &mut self,
        ip: IpAddr,
        limit: usize,
        lease: Duration,
    ) -> Result<Grant, FleetError> {
        self.leases
            .acquire(&format!("ip:{ip}"), limit, lease, self.expired_delay)
    }

    fn server_release(
        &mut self,
        ip: IpAddr,
        token: &str,
        delay: Duration,
    ) -> Result<(), FleetError> {
        self.leases.release(&format!("ip:{ip}"), token, delay)?;
        Ok(())
    }
}

/// `status \t at \t body` as shared by `share_robots`.
fn parse_robots(raw: &[u8]) -> Option<(u16, Vec<u8>, i64)> {
    let mut parts = raw.splitn(3, |b| *b == b'\t');
    let status = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
    let at = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
    Some((status, parts.next()?.to_vec(), at))
}

impl Drop for FleetProcess {
    /// Says what the saved batches cost in host parts (the fleet bench prints it).
    fn drop(&mut self) {
        let [batches, parts, alone, pages] = self.sent;
        tracing::info!(
            "fleet: {batches} saved batches sent, {parts} host parts ({alone} paying cash alone) for {pages} pages, {:.2} a page",
            parts as f64 / pages.max(1) as f64
        );
    }
}
