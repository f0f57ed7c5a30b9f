//! The crawl loop as one process of a fleet: the hosts it holds come from the shared
//! frontier, what it finds goes there once its batch is saved, and what it settles is
//! settled there after. Its own directory under `--out` holds its state and WARC files, so
//! that the processes share nothing but Redis.
//!
//! Order of a batch, for `kill -9` at any moment: records synced, the process's state
//! committed, then the new URLs offered, then the rows settled, then idle hosts given back.
//! A crash before the offers leaves the batch's rows taken: the host's next holder puts them
//! back and fetches them again (the links are found again with them).

use super::open::HostStart;
use super::{CrawlError, Engine};
use crate::clock::now_ms;
use crate::config::{self, CrawlArgs, FleetSettings, Settings};
use crate::frontier::Dispatch;
use crate::frontier::RobotsState;
use crate::frontier::fleet::FleetError;
use crate::frontier::fleet::members::{Heartbeat, Members};
use crate::frontier::fleet::names::{self, NameLease};
use crate::frontier::fleet::process::FleetProcess;
use crate::frontier::robots::Rules;
use crate::frontier::shared::Grant;
use crate::frontier::shared::{Saved, SharedFrontier, TrackedPage};
use crate::ids::Fp;
use crate::ids::HostId;
use crate::state::{HostRecord, NewUrl};
use std::collections::HashMap;
use std::fs::File;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Hosts a process of a fleet leases, at most, per host it crawls at once.
const HELD_PER_BENCH: usize = 4;

/// Hosts a heartbeat names, at most, of those the process holds (`status` shows them).
const HELD_SHOWN: usize = 16;

/// What the loop decided that the fleet must hear of, said at its next fallible step.
pub(super) enum Tell {
    /// A robots.txt was read: status, body, when.
    Robots(HostId, u16, Vec<u8>, i64),
    /// A host is given up on, for the reason.
    GiveUp(HostId, String),
    /// A request under a server lease ended: address, token, delay.
    ServerRelease(IpAddr, String, Duration),
}

/// This process's part of a fleet, as the loop keeps it: the shared frontier and what is
/// owed to it.
pub(super) struct Fleet {
    shared: Box<dyn SharedFrontier + Send>,
    /// What the fleet must hear of at the next step.
    pub(super) tell: Vec<Tell>,
    /// The links of the page being recorded, with their hosts (their cash is paid).
    pub(super) children: Vec<(Fp, HostId)>,
    /// Cash owed to URLs queued in the fleet, paid after the next batch is saved.
    cash: HashMap<HostId, Vec<(Fp, f64)>>,
    /// URLs found that their host's robots.txt forbids, recorded as such at once: no cash
    /// is sent to them after the next batch is saved.
    pub(super) forbidden: Vec<Fp>,
    /// Pages kept fresh visited since the last batch, for the shared schedule.
    pub(super) tracked: HashMap<HostId, Vec<TrackedPage>>,
    /// Server leases held for requests under way (politeness keyed by address).
    server_leases: HashMap<HostId, Vec<(IpAddr, String)>>,
    /// When the last heartbeat was, with the pages fetched then.
    beat_mark: (Instant, u64),
    /// The machine's name, said in every heartbeat.
    machine: String,
    /// This process's name, held in Redis while it runs.
    name: NameLease,
}

impl Fleet {
    /// Tells the fleet what the loop decided since the last step.
    fn tell_all(&mut self) -> Result<(), CrawlError> {
        for tell in std::mem::take(&mut self.tell) {
            match tell {
                Tell::Robots(host, status, body, at) => {
                    self.shared.share_robots(host, status, &body, at)?
                }
                Tell::GiveUp(host, reason) => self.shared.delete_queue(host, &reason)?,
                Tell::ServerRelease(ip, token, delay) => {
                    self.shared.server_release(ip, &token, delay)?
                }
            }
        }
        Ok(())
    }

    /// The shared frontier, for the in-process frontier to refill from.
    pub(super) fn shared_mut(&mut self) -> &mut (dyn SharedFrontier + Send) {
        self.shared.as_mut()
    }

    fn new(shared: Box<dyn SharedFrontier + Send>, name: NameLease) -> Fleet {
        Fleet {
            shared,
            tell: Vec::new(),
            children: Vec::new(),
            cash: HashMap::new(),
            forbidden: Vec::new(),
            tracked: HashMap::new(),
            server_leases: HashMap::new(),
            beat_mark: (Instant::now(), 0),
            machine: names::machine(),
            name,
        }
    }
}

/// The settings of a process joining `--crawl` on `--frontier`: the crawl's stored ones (or
/// these, for the process that starts it), with this process's own.
pub fn join(args: &CrawlArgs) -> Result<Settings, CrawlError> {
    let (Some(url), Some(crawl)) = (&args.frontier, &args.crawl) else {
        return Ok(config::settings(args)?);
    };
    // Settings wrong in themselves are refused before Redis is asked anything.
    config::settings(args)?;
    let given = config::shared_settings(args)?;
    let url_shown = crate::frontier::fleet::shown(url);
    let mut members = Members::connect(url, crawl)?;
    let (stored, new) = members.settings(&given)?;
    if new {
        tracing::info!("crawl {crawl:?} started on {url_shown}");
    } else {
        tracing::info!("joining crawl {crawl:?} on {url_shown} with its stored settings");
    }
    let mut s = config::settings_joining(args, crawl, &stored)?;
    let given_seeds: Vec<String> = s.seeds.iter().map(|u| u.to_string()).collect();
    s.seeds = members
        .seeds(&given_seeds)?
        .iter()
        .filter_map(|u| url::Url::parse(u).ok())
        .collect();
    Ok(s)
}

/// Checks a process name given with `--process`.
fn check_name(name: &str) -> Result<(), CrawlError> {
    if name.is_empty() || name.contains(['/', '{', '}']) || name == ".." || name == "." {
        return Err(CrawlError::Start {
            what: format!("process {name:?}"),
            source: "a process name is a non-empty file name without braces".into(),
        });
    }
    Ok(())
}

/// A shard's directory under `--out`, locked: its index is claimed in Redis by the shard
/// itself. Returns the lock, the name and the directory.
pub(super) fn shard_dir(
    out: &std::path::Path,
    name: &str,
) -> Result<(File, String, PathBuf), CrawlError> {
    check_name(name)?;
    let dir = out.join(name);
    Ok((super::lock(&dir)?, name.to_string(), dir))
}

/// This process's name in the fleet, taken in Redis, and its directory under `--out`,
/// locked: the name given (refused while another live process holds it), or the first
/// `MACHINE-N` no live process holds, directories that held a name before first (so that a
/// process started again after a crash takes its own name back, once its lease lapsed).
pub(super) fn take_name(
    out: &std::path::Path,
    fleet: &FleetSettings,
    stop: &Arc<AtomicBool>,
) -> Result<(File, NameLease, PathBuf), CrawlError> {
    if let Some(name) = &fleet.process {
        check_name(name)?;
        return match try_name(out, fleet, name, stop)? {
            Ok(taken) => Ok(taken),
            Err(other) => Err(FleetError::Name(format!(
                "process name {name:?} is held by a live process of crawl {:?} (pid {} on {}, directory {}): give another --process, or stop that one (a process killed without stopping gives its name up within fleet_lease, {} s)",
                fleet.crawl,
                other.pid,
                other.machine,
                other.dir,
                fleet.lease.as_secs_f64()
            ))
            .into()),
        };
    }
    let host = names::machine();
    let numbered = |n: u32| format!("{host}-{n}");
    // Directories of earlier runs first, in order, then any name.
    let mut used: Vec<u32> = std::fs::read_dir(out)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n: u32 = name.strip_prefix(&format!("{host}-"))?.parse().ok()?;
            names::has_dir_id(&e.path()).then_some(n)
        })
        .collect();
    used.sort_unstable();
    for n in used.into_iter().chain(1..=u32::MAX) {
        match try_name(out, fleet, &numbered(n), stop) {
            Ok(Ok(taken)) => return Ok(taken),
            Ok(Err(_)) | Err(CrawlError::Locked(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(FleetError::Name(format!("no process name {host}-N is free")).into())
}

/// Locks `out/name` and takes `name` in Redis for it; the holder when another live process
/// has the name (the directory's lock is then let go).
fn try_name(
    out: &std::path::Path,
    fleet: &FleetSettings,
    name: &str,
    stop: &Arc<AtomicBool>,
) -> Result<Result<(File, NameLease, PathBuf), names::Holder>, CrawlError> {
    let dir = out.join(name);
    let lock = super::lock(&dir)?;
    let (id, made) = names::dir_id(&dir).map_err(super::file_error(&dir))?;
    let taken = NameLease::take(
        &fleet.frontier,
        &fleet.crawl,
        name,
        (&id, &dir),
        fleet.lease,
        stop,
    )?;
    Ok(match taken {
        Ok(lease) => Ok((lock, lease, dir)),
        Err(other) => {
            if made {
                // Not this directory's name: it stays a directory that never held one.
                names::forget_dir_id(&dir);
            }
            Err(other)
        }
    })
}

/// Joins the fleet under the name held.
pub(super) fn connect(
    s: &Settings,
    fleet: &FleetSettings,
    name: NameLease,
    stop: Arc<AtomicBool>,
) -> Result<Fleet, CrawlError> {
    let process = FleetProcess::join(
        &fleet.frontier,
        &fleet.crawl,
        (name.name(), &name.run()),
        (s.robots_ttl, s.politeness.min_delay, fleet.lease),
        stop,
    )?;
    Ok(Fleet::new(Box::new(process), name))
}

impl Engine {
    /// The id of the host with `origin`: the fleet's, recorded in this process's state too.
    pub(super) fn host_for(&mut self, origin: &str) -> Result<HostId, CrawlError> {
        let Some(fleet) = self.fleet.as_mut() else {
            return Ok(self.frontier.host_for(&self.store, origin)?);
        };
        if let Some(id) = self.frontier.id_of(origin) {
            return Ok(id);
        }
        let id = fleet.shared.queue_key(origin)?;
        self.store.ensure_host(id, origin)?;
        self.frontier.known(id, origin);
        Ok(id)
    }

    /// Before a request to `host`: whether this process may still contact it (it holds its
    /// lease). When not, what it held of the host is dropped: the next holder puts it back.
    pub(super) fn fleet_keep(&mut self, host: HostId, now: Instant) -> Result<bool, CrawlError> {
        let Some(fleet) = self.fleet.as_mut() else {
            return Ok(true);
        };
        if fleet.shared.keep(host, now)? {
            return Ok(true);
        }
        self.frontier.finished(host, now);
        self.frontier.unlease(host);
        Ok(false)
    }

    /// A request to a host ended: its politeness clock, and in a fleet keyed by address, the
    /// server's lease given back.
    pub(super) fn request_ended(&mut self, host: HostId, not_before: Instant) {
        self.frontier.finished(host, not_before);
        self.pace_lane(host, not_before);
        if let Some(fleet) = self.fleet.as_mut()
            && let Some((ip, token)) = fleet.server_leases.get_mut(&host).and_then(Vec::pop)
        {
            let delay = not_before.saturating_duration_since(Instant::now());
            fleet.tell.push(Tell::ServerRelease(ip, token, delay));
        }
    }

    /// In a fleet keyed by address, before a request: a lease on the host's server, since
    /// other processes may hold other hosts of it. Returns whether the request may go; when
    /// not, what was handed out goes back, to be tried when the server allows.
    pub(super) fn server_turn(
        &mut self,
        next: Dispatch,
        now: Instant,
    ) -> Result<Option<Dispatch>, CrawlError> {
        let host = next.host();
        let ip = self.frontier.host(host).and_then(|h| h.address.ip());
        let (Some(fleet), Some(ip)) = (self.fleet.as_mut(), ip) else {
            return Ok(Some(next));
        };
        if matches!(next, Dispatch::Resolve(_)) {
            return Ok(Some(next));
        }
        let lease = self.settings.fetch.timeout + Duration::from_secs(60);
        let wait = match fleet
            .shared
            .server_lease(ip, self.settings.per_host, lease)?
        {
            Grant::Granted(token) => {
                fleet
                    .server_leases
                    .entry(host)
                    .or_default()
                    .push((ip, token));
                return Ok(Some(next));
            }
            Grant::Wait(d) => d,
            Grant::Busy => Duration::from_millis(100),
        };
        match next {
            Dispatch::Page(job) => self.frontier.requeue(job),
            Dispatch::Coop(_, job) => self.frontier.push_coop(host, job),
            Dispatch::Robots(_) => {
                if let Some(h) = self.frontier.host_mut(host) {
                    h.robots = RobotsState::Unknown;
                }
            }
            Dispatch::Resolve(_) => {}
        }
        self.frontier.finished(host, now + wait);
        Ok(None)
    }

    /// Takes hosts with work up to this process's share, and says what the loop decided.
    pub(super) fn fleet_step(&mut self, now: Instant) -> Result<(), CrawlError> {
        let Some(fleet) = self.fleet.as_mut() else {
            return Ok(());
        };
        for (host, n) in fleet.shared.written(false)? {
            self.frontier.add_queued(host, n as u64);
        }
        fleet.tell_all()?;
        if self.frontier.pending_len() == 0 && !self.unsaved.any_settled() {
            self.fleet_tidy(now)?;
        }
        if self.in_flight.requests() >= self.settings.concurrency {
            return Ok(());
        }
        let Some(fleet) = self.fleet.as_mut() else {
            return Ok(());
        };
        // Several times as many hosts as one process crawls at once (its workbench), not as
        // many requests as it has under way: a polite host asks one request a delay, so a
        // process holding `concurrency` hosts (128) fetched 126 pages a second on 3,000 hosts
        // where one process alone, holding them all, fetched 342. And more than the
        // workbench, so that the workbench chooses among them as one process alone does (the
        // longest to crawl first): holding only as many, the fleet first leased the slowest
        // host of 10,000 at 138 s, and ended there. Bounded, as each is renewed every 10 s.
        let hosts = match self.settings.hosts_at_once {
            0 => usize::MAX,
            n => n.saturating_mul(HELD_PER_BENCH),
        };
        let claimed = fleet.shared.get_queues(hosts, now)?;
        let start = HostStart {
            token: self.token.clone(),
            politeness: self.settings.politeness,
            robots_ttl: self.settings.robots_ttl,
            now,
            now_ms: now_ms(),
            // The lease was granted at the host's next allowed time, whoever set it.
            quiet: None,
        };
        for c in claimed {
            self.store.ensure_host(c.host, &c.origin)?;
            let (status, body, at) = match c.robots.clone() {
                Some((status, body, at)) => (Some(status), Some(body), Some(at)),
                None => (None, None, None),
            };
            let rec = HostRecord {
                id: c.host,
                origin: c.origin.clone(),
                robots_status: status,
                robots_body: body,
                robots_fetched: at,
                ..Default::default()
            };
            // The lease was granted at the host's next allowed time, whoever set it.
            let (robots, skipped, _) = start.state(&rec);
            tracing::debug!(host = %c.origin, queued = c.queued, "host taken");
            self.frontier
                .lease(c.host, &c.origin, c.queued, robots, now);
            if let Some(reason) = skipped {
                self.give_up(c.host, reason);
                continue;
            }
            // Cooperation starts from the robots.txt another process read, as from one read here.
            if let Some((status, body, _)) = &c.robots {
                self.with_coop(|co, r| co.discover(r, c.host, Some(*status), body));
            }
            self.take_over_schedule(c.host, &c.tracked);
        }
        Ok(())
    }

    /// A page read in a fleet gave `cash` to its `links` links: the shares of those queued
    /// before this batch are owed to the shared queue, where another process may hold them (a
    /// URL new in this batch is offered with its cash, which the queue adds to a copy another
    /// process queued first).
    pub(super) fn fleet_pay(&mut self, cash: f64, links: usize) {
        let Some(fleet) = self.fleet.as_mut() else {
            return;
        };
        let children = std::mem::take(&mut fleet.children);
        if links == 0 || cash <= 0.0 {
            return;
        }
        let each = cash * (1.0 - self.settings.opic_eps) / links as f64;
        for (fp, host) in children {
            if !self.frontier.is_pending(fp) {
                fleet.cash.entry(host).or_default().push((fp, each));
            }
        }
    }

    /// The pages a host's last holder kept fresh are fetched again here: this process holds
    /// no copy of them, and their records join its schedule as any visit's does.
    fn take_over_schedule(&mut self, host: HostId, tracked: &[TrackedPage]) {
        if self.settings.keep_fresh.is_none() || tracked.is_empty() {
            return;
        }
        let mut n = 0;
        for p in tracked {
            let known = self
                .schedule
                .as_ref()
                .is_some_and(|s| s.page(p.fp).is_some());
            if !known {
                self.frontier
                    .push_revisit(host, p.url.clone(), p.fp, p.depth);
                n += 1;
            }
        }
        if n > 0 {
            tracing::info!("host {host}: {n} pages its last holder kept fresh are fetched again");
        }
    }

    /// After a batch is saved: its new URLs offered to the shared queue, its rows settled
    /// there, and idle hosts given back.
    pub(super) fn fleet_saved(
        &mut self,
        offers: Vec<NewUrl>,
        settled: &[(HostId, i64)],
    ) -> Result<(), CrawlError> {
        let Some(fleet) = self.fleet.as_mut() else {
            return Ok(());
        };
        let saved = Saved {
            discovered: offers,
            cash: std::mem::take(&mut fleet.cash),
            forbidden: std::mem::take(&mut fleet.forbidden),
            tracked: std::mem::take(&mut fleet.tracked),
            done: settled.to_vec(),
        };
        for (host, n) in fleet.shared.put_saved(saved)? {
            self.frontier.add_queued(host, n as u64);
        }
        self.fleet_tidy(Instant::now())
    }

    /// Renews the leases close to their end, and gives back the hosts with nothing left
    /// to do here (or more than this process's share, when it holds far more).
    fn fleet_tidy(&mut self, now: Instant) -> Result<(), CrawlError> {
        let Some(fleet) = self.fleet.as_mut() else {
            return Ok(());
        };
        for host in fleet.shared.renew_all(now)? {
            self.frontier.unlease(host);
        }
        // A crawl kept fresh keeps its hosts: their pages' history and schedule, their
        // cooperation and subscription are this process's.
        if self.settings.keep_fresh.is_some() {
            return Ok(());
        }
        let leased = self.frontier.leased();
        // A host offered URLs still being written has work its count does not show yet.
        let idle: Vec<(HostId, Instant)> = leased
            .iter()
            .filter(|(h, idle, _)| *idle && !fleet.shared.awaiting(*h))
            .map(|(h, _, at)| (*h, *at))
            .collect();
        for (host, at) in idle {
            self.let_go(host, at, now)?;
        }
        let Some(fleet) = self.fleet.as_mut() else {
            return Ok(());
        };
        // Hosts beyond this process's share go to processes that joined later; only those
        // with nothing under way, so that nothing taken is left behind.
        let excess = fleet.shared.excess();
        if excess > 0 {
            let quiet: Vec<(HostId, Instant)> = self
                .frontier
                .leased()
                .into_iter()
                .filter(|(h, _, _)| self.frontier.host(*h).is_some_and(|h| h.in_flight == 0))
                .map(|(h, _, at)| (h, at))
                .take(excess)
                .collect();
            for (host, at) in quiet {
                let unsent = self.frontier.unlease(host);
                if let Some(fleet) = self.fleet.as_mut() {
                    fleet
                        .shared
                        .hand_over(host, unsent, at.saturating_duration_since(now), now)?;
                }
            }
        }
        Ok(())
    }

    fn let_go(&mut self, host: HostId, next: Instant, now: Instant) -> Result<(), CrawlError> {
        let Some(fleet) = self.fleet.as_mut() else {
            return Ok(());
        };
        let unsent = self.frontier.unlease(host);
        fleet
            .shared
            .release(host, unsent, next.saturating_duration_since(now))?;
        Ok(())
    }

    /// Gives back every host held (a stop): their rows return at once and their politeness
    /// goes with them.
    pub(super) fn fleet_leave(&mut self) -> Result<(), CrawlError> {
        if self.fleet.is_none() {
            return Ok(());
        }
        let now = Instant::now();
        // A request dropped at the stop still holds its server's lease, which would keep the
        // other processes off that server until it expired (a minute and a half): given back
        // with the pace owed after a request that may just have reached the server.
        let dropped: Vec<(HostId, Vec<(IpAddr, String)>)> = self
            .fleet
            .as_mut()
            .map(|f| f.server_leases.drain().collect())
            .unwrap_or_default();
        for (host, leases) in dropped {
            let crawl_delay = self.frontier.rules(host, now).and_then(Rules::crawl_delay);
            let delay = self.host_delay(host, crawl_delay, Duration::ZERO);
            if let Some(fleet) = self.fleet.as_mut() {
                fleet.tell.extend(
                    leases
                        .into_iter()
                        .map(|(ip, token)| Tell::ServerRelease(ip, token, delay)),
                );
            }
        }
        if let Some(fleet) = self.fleet.as_mut() {
            fleet.tell_all()?;
        }
        for (host, _, at) in self.frontier.leased() {
            self.let_go(host, at, now)?;
        }
        self.fleet_beat("stopped")?;
        // The hosts given back and the last heartbeat are written before the process ends.
        if let Some(fleet) = self.fleet.as_mut() {
            fleet.shared.written(true)?;
        }
        Ok(())
    }

    /// Whether the crawl may still bring this process work from elsewhere, once what it
    /// found itself is written (and counted in its hosts' queues).
    pub(super) fn fleet_busy(&mut self) -> Result<bool, CrawlError> {
        let Some(fleet) = self.fleet.as_mut() else {
            return Ok(false);
        };
        let busy = fleet.shared.work_elsewhere(Instant::now())?;
        for (host, n) in fleet.shared.written(false)? {
            self.frontier.add_queued(host, n as u64);
        }
        // The writes just waited for may have listed hosts (the seeds', at the start): they
        // are taken now rather than at the loop's next look, up to 250 ms later.
        if busy {
            self.fleet_step(Instant::now())?;
        }
        Ok(busy)
    }

    /// Tells the fleet how this process is.
    pub(super) fn fleet_beat(&mut self, state: &str) -> Result<(), CrawlError> {
        let Some(fleet) = self.fleet.as_mut() else {
            return Ok(());
        };
        fleet.name.check()?;
        let now = Instant::now();
        let (last_at, last_fetched) = fleet.beat_mark;
        let secs = now.duration_since(last_at).as_secs_f64();
        let rate = if secs > 0.0 {
            (self.run.counts().fetched - last_fetched) as f64 / secs
        } else {
            0.0
        };
        fleet.beat_mark = (now, self.run.counts().fetched);
        let beat = Heartbeat {
            at: 0,
            machine: fleet.machine.clone(),
            pid: std::process::id(),
            state: state.to_string(),
            fetched: self.run.counts().fetched,
            rate,
            hosts: 0,
            held: self.frontier.leased_origins(HELD_SHOWN),
            in_flight: self.in_flight.requests(),
            taken: 0,
            dir: self.settings.out.display().to_string(),
            warc_bytes: self.metrics.warc_bytes.get(),
        };
        fleet.shared.beat(&beat)?;
        Ok(())
    }
}

/// Waits this long between two looks at the fleet while this process has nothing to do.
pub(super) const IDLE_LOOK: Duration = Duration::from_millis(250);
