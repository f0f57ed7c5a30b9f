//! The queue and seen-set a fleet shares, in Redis: each URL is queued once whichever process
//! finds it, and taken by one process at a time under a lease that returns it to the queue if
//! the process dies before it is settled.
//!
//! Layout, per crawl `C`:
//! - `{C:crawl}:hosts` (hash origin -> id), `{C:crawl}:origins` (id -> origin) and
//!   `{C:crawl}:host_ids` (counter): host ids, one per origin.
//! - `{C:crawl}:active` (sorted set of host ids, scored by the best priority offered): the
//!   hosts with work; a host is listed before its rows are queued and unlisted only when its
//!   queue is found empty after.
//! - `{C:crawl}:skipped` (hash id -> reason): hosts given up on.
//! - `{C:crawl}:layout` (string): the version of this layout, [`LAYOUT`]; a crawl begun by a
//!   build with another layout is refused by name rather than misread.
//! - The keys of host `ID` carry the hash tag of one of [`HOST_GROUPS`] groups `N` (from
//!   layout 5; before, `{C:ID}`), so that the hosts of a group share a slot of a cluster and
//!   a saved batch is one script call per group:
//! - `{C:qgN}:ID:rows:B` (hashes fingerprint -> `seq \t depth \t hops \t attempts \t revisit \t
//!   url`, or empty once done): the host's seen-set and what the crawl loop needs of a URL
//!   queued or taken. One store for both, so that "seen? then queue" is one `HSETNX` in one
//!   slot (no crash can lose a URL or queue it twice), and a queued URL is held once, not in a
//!   set besides. The URL is kept without its origin when it starts with it (the host's origin
//!   is known).
//! - `{C:qgN}:ID:shape` (hash `level`, `split`, `count`, `seq`): the host's rows are numbered
//!   in arrival order (`seq`, the last number given; a key of its own before layout 6, read
//!   and written by every part that queued a URL), and spread over buckets
//!   `B`, by linear hashing on the low 24 bits of the fingerprint: `2^level + split` buckets of
//!   about [`ROWS_PER_BUCKET`] rows, split one at a time as the host grows, so that each stays
//!   small enough for Redis to keep it as a listpack (`hash-max-listpack-entries`, 128 by
//!   default, and `hash-max-listpack-value`, 64 bytes): a row then costs its bytes and about
//!   four more, where a hash table entry costs 60 beyond them. A bucket holding a longer row
//!   becomes a hash table, which costs what one hash of every row would.
//! - `{C:qgN}:ID:queue` (sorted set of fingerprints scored by minus their OPIC cash): the URLs
//!   waiting, best first. The fingerprint is the member so that any process can pay a queued
//!   URL cash (`ZADD XX INCR`) without knowing more of it.
//! - `{C:qgN}:ID:taken` (sorted set of takings' tokens scored by their lease's expiry, server ms)
//!   and `{C:qgN}:ID:holders` (hash token -> 16 bytes per URL: its fingerprint, then its cash as a
//!   big-endian double): the URLs handed out, by which taking, with the cash they go back
//!   with. A taking's URLs are held together, so that handing out and settling cost a write
//!   per taking rather than two per URL.
//! - `{C:qgN}:answer:HOLDER` (string, a day's expiry): the answer of process `HOLDER`'s last
//!   saved batch in the group, with the call's id, so that a call sent again after its answer
//!   was lost is answered as it was the first time rather than run twice.
//! - `{C:lgN}:leases:KEY` and `{C:lgN}:next:KEY`: the host leases of `super::leases`, in one
//!   of its groups `N` (from layout 4; before, `{C:KEY}:leases` and `{C:KEY}:next`).
//!
//! A fingerprint is its 8 bytes, big-endian, wherever it is a member or a field: as decimal
//! text it took 20 bytes, and with three copies of each queued URL's, the difference is a
//! quarter of the memory a URL costs (docs/ARCHITECTURE.md has the sums).

use super::queue_scripts as scripts;
use super::redis_link::RedisLink;
use super::{FleetError, connect, tag};
use crate::ids::{Fp, HostId};
use crate::state::{NewUrl, Queued};
use redis::Script;
use std::collections::BTreeMap;
use std::time::Duration;

/// The version of the layout above, kept in `{C:crawl}:layout`.
pub(crate) const LAYOUT: &str = "6";

/// Rows per bucket at which the next bucket is split: buckets not yet split in a round hold
/// up to twice as many, which stays under Redis's 128 listpack entries with room for chance.
pub(crate) const ROWS_PER_BUCKET: u32 = 40;

/// What becomes of a taken row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// It was fetched (or given up): gone from the queue.
    Done,
    /// Back in the queue with one more attempt.
    Retry,
    /// Back in the queue as it was (never tried: its taker let the host go).
    Return,
}

/// A URL handed out, with the token of its taking to settle it by.
#[derive(Debug, Clone, PartialEq)]
pub struct Taken {
    /// The URL as the crawl loop sees it.
    pub job: Queued,
    token: String,
}

/// Groups of hosts whose queue keys share a hash tag (one slot of a cluster): a saved batch
/// is one script per group, not one per host.
pub(crate) const HOST_GROUPS: u64 = 32;

/// The group of `host`'s queue keys.
fn host_group(host: HostId) -> u64 {
    // xxh3 rather than std's hasher: every build of a fleet must put a host in one group.
    xxhash_rust::xxh3::xxh3_64(host.0.to_string().as_bytes()) % HOST_GROUPS
}

/// What `host`'s queue keys start with: its group's hash tag, then its id.
pub(crate) fn host_prefix(crawl: &str, host: HostId) -> String {
    format!(
        "{}:{}",
        tag(crawl, &format!("qg{}", host_group(host))),
        host.0
    )
}

/// Appends `a` to a script's arguments.
fn push<T: redis::ToRedisArgs>(out: &mut Vec<Vec<u8>>, a: &T) {
    a.write_redis_args(out);
}

/// The keys of one host's queue, in the order every host script takes them.
struct HostKeys([String; 5]);

/// A taking a put makes for this process: its token, and the URLs offered under it.
type Holding = (String, Vec<NewUrl>);

/// One host's part of a group's script: the host, the URLs it was offered, and the taking
/// that holds the new ones.
type Part = (HostId, usize, Option<Holding>);

/// One group's script: its hosts' keys, their arguments, and what each part was.
type GroupPut = (Vec<String>, Vec<Vec<u8>>, Vec<Part>);

/// What a saved batch owes one host's queue.
#[derive(Default)]
struct HostPut {
    urls: Vec<NewUrl>,
    /// The lease under which the URLs new to the crawl are held by this process rather than
    /// queued (it holds the host and would take them next).
    hold: Option<Duration>,
    cash: Vec<(Fp, f64)>,
    settles: Vec<(String, &'static str, Vec<Fp>)>,
}

/// What a saved batch owes the shared queue, to be sent in one round trip: the hosts offered
/// URLs listed first, then one script per host, then the caller's own commands.
#[derive(Default)]
pub(crate) struct Put {
    hosts: std::collections::BTreeMap<HostId, HostPut>,
    rest: Vec<redis::Cmd>,
}

impl HostPut {
    /// The script's arguments for this host: the taking that holds its new URLs (token and
    /// lease), its URLs (relative to `origin`), its cash and its settled takings.
    fn arguments(&self, hold: Option<&(String, Duration)>, origin: &str) -> Vec<Vec<u8>> {
        let mut part: Vec<Vec<u8>> = Vec::with_capacity(4 + 6 * self.urls.len());
        push(&mut part, &hold.map_or("", |(t, _)| t.as_str()));
        push(&mut part, &hold.map_or(0, |(_, l)| l.as_millis() as u64));
        push(&mut part, &self.urls.len());
        for u in &self.urls {
            push(&mut part, &&member(u.fp)[..]);
            push(&mut part, &u.priority.max(0.0));
            push(&mut part, &u.depth);
            push(&mut part, &u.hops);
            push(&mut part, &if u.revisit { "1" } else { "0" });
            push(&mut part, &relative(&u.url, origin));
        }
        push(&mut part, &self.cash.len());
        for (fp, c) in &self.cash {
            push(&mut part, &&member(*fp)[..]);
            push(&mut part, c);
        }
        for (token, how, fps) in &self.settles {
            push(&mut part, token);
            push(&mut part, how);
            push(&mut part, &fps.len());
            for fp in fps {
                push(&mut part, &&member(*fp)[..]);
            }
        }
        part
    }
}

/// What one host's part of a [`Put`] did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PutDone {
    /// URLs queued (not seen before, or revisits), held ones included.
    pub(crate) queued: usize,
    /// The URLs new to the crawl taken for this process as they were offered (see
    /// [`Put::hold`]), in the order they were queued.
    pub(crate) held: Vec<Taken>,
    /// Rows settled (still held by the token they were settled with).
    pub(crate) settled: usize,
    /// URLs offered.
    pub(crate) offered: usize,
}

/// The shared queue of one crawl, over one connection (a process holds one).
pub struct SharedQueue {
    link: RedisLink,
    /// Each host's origin, as rows are kept without it.
    origins: std::collections::HashMap<HostId, String>,
    crawl: String,
    holder: String,
    takes: u64,
    puts: u64,
    /// Batches sent: each call's id, by which a call sent again after its answer was lost
    /// is answered as the first time (see [`scripts::PUT`]).
    calls: u64,
    put: Script,
    take: Script,
    reclaim: Script,
    host_id: Script,
}

impl SharedQueue {
    /// Connects to the frontier at `url` for crawl `crawl` (see
    /// [`super::leases::HostLeases::connect`]); `holder` names this process in its leases.
    pub fn connect(url: &str, crawl: &str, holder: &str) -> Result<SharedQueue, FleetError> {
        let mut link = connect(url, crawl)?;
        check_layout(&mut link, url, crawl)?;
        Ok(SharedQueue {
            link,
            origins: Default::default(),
            crawl: crawl.to_string(),
            // Unique to this connection: a process restarted under the same name must not
            // take a token its last run left in the queue.
            holder: format!("{holder}:{}:{}", std::process::id(), crate::clock::now_ms()),
            takes: 0,
            puts: 0,
            calls: 0,
            put: Script::new(scripts::PUT),
            take: Script::new(scripts::TAKE),
            reclaim: Script::new(scripts::RECLAIM),
            host_id: Script::new(scripts::HOST_ID),
        })
    }

    /// The connection, to wait out a pause with Ctrl-C.
    pub(crate) fn link(&mut self) -> &mut RedisLink {
        &mut self.link
    }

    /// The fleet as it is now, on this connection (see [`super::members::look`]).
    pub(crate) fn look(&mut self) -> Result<super::members::Look, FleetError> {
        super::members::look(&mut self.link, &self.crawl)
    }

    /// Says how process `name` is, on this connection (see [`super::members::beat`]).
    pub(crate) fn beat(
        &mut self,
        name: &str,
        beat: &super::members::Heartbeat,
    ) -> Result<(), FleetError> {
        super::members::beat(&mut self.link, &self.crawl, name, beat)
    }

    fn host_keys(&self, host: HostId) -> HostKeys {
        let tag = host_prefix(&self.crawl, host);
        HostKeys(["queue", "rows", "shape", "taken", "holders"].map(|k| format!("{tag}:{k}")))
    }

    fn crawl_key(&self, name: &str) -> String {
        format!("{}:{name}", tag(&self.crawl, "crawl"))
    }

    /// The id of the host with `origin`, the same in every process.
    pub fn host_id(&mut self, origin: &str) -> Result<HostId, FleetError> {
        let keys = [
            self.crawl_key("hosts"),
            self.crawl_key("host_ids"),
            self.crawl_key("origins"),
        ];
        let script = &self.host_id;
        let id: i64 = self
            .link
            .run(|con| script.key(&keys[..]).arg(origin).invoke(con))?;
        self.origins.insert(HostId(id), origin.to_string());
        Ok(HostId(id))
    }

    /// The origin of a host id any process gave out.
    pub(crate) fn origin(&mut self, host: HostId) -> Result<Option<String>, FleetError> {
        if let Some(o) = self.origins.get(&host) {
            return Ok(Some(o.clone()));
        }
        let key = self.crawl_key("origins");
        let origin: Option<String> = self
            .link
            .run(|con| redis::cmd("HGET").arg(&key).arg(host.0).query(con))?;
        if let Some(o) = &origin {
            self.origins.insert(host, o.clone());
        }
        Ok(origin)
    }

    /// Queues the URLs of `host` no process has seen (and every revisit); returns how many.
    /// Their `seq` and `host` are not used: rows are numbered per host, in arrival order. The host is listed
    /// among those with work first, so that no crash can leave queued rows unlisted.
    pub fn offer(&mut self, host: HostId, urls: &[NewUrl]) -> Result<usize, FleetError> {
        let mut put = Put::default();
        put.offer(host, urls.to_vec());
        Ok(self.send(put)?.first().map_or(0, |(_, d)| d.queued))
    }

    /// Offers the URLs of many hosts as [`SharedQueue::offer`] does for one, in one round trip
    /// and one script call per group of hosts; returns how many each host queued.
    pub fn offer_many(
        &mut self,
        offers: Vec<(HostId, Vec<NewUrl>)>,
    ) -> Result<Vec<(HostId, usize)>, FleetError> {
        let mut put = Put::default();
        for (host, urls) in offers {
            put.offer(host, urls);
        }
        Ok(self
            .send(put)?
            .into_iter()
            .map(|(h, d)| (h, d.queued))
            .collect())
    }

    /// Offers `urls` as [`SharedQueue::offer`] does, but takes those new to the crawl for this
    /// process at once under `lease` (as [`SharedQueue::take`] would): for the process that
    /// holds `host`. Revisits and URLs another process found first are queued or paid as
    /// offers are.
    pub fn offer_held(
        &mut self,
        host: HostId,
        urls: &[NewUrl],
        lease: Duration,
    ) -> Result<Vec<Taken>, FleetError> {
        let mut put = Put::default();
        put.offer(host, urls.to_vec());
        put.hold(host, lease);
        Ok(self
            .send(put)?
            .into_iter()
            .flat_map(|(_, d)| d.held)
            .collect())
    }

    /// Gives queued URLs of `host` more cash; those no longer queued are left alone.
    pub fn deposit(&mut self, host: HostId, cash: &[(Fp, f64)]) -> Result<(), FleetError> {
        let mut put = Put::default();
        put.deposit(host, cash.to_vec());
        self.send(put)?;
        Ok(())
    }

    /// Sends what `put` holds, in one round trip on one server and two on a cluster; returns
    /// what each host's part did.
    pub(crate) fn send(&mut self, put: Put) -> Result<Vec<(HostId, PutDone)>, FleetError> {
        let mut cmds = Vec::with_capacity(1 + HOST_GROUPS as usize + put.rest.len());
        // Every host offered URLs listed with one command (`GT` holds per member).
        let mut listed = redis::cmd("ZADD");
        listed.arg(self.crawl_key("active")).arg("GT");
        let mut any = false;
        for (host, p) in &put.hosts {
            if let Some(best) = p.urls.iter().map(|u| u.priority).reduce(f64::max) {
                listed.arg(best).arg(host.0);
                any = true;
            }
        }
        if any {
            cmds.push(listed);
        }
        let first = cmds.len();
        // Per group of hosts: one script, and per host its keys, its arguments and what it
        // offered (with the taking that holds the new ones).
        let mut groups: BTreeMap<u64, GroupPut> = BTreeMap::new();
        for (host, p) in put.hosts {
            let origin = match p.urls.is_empty() {
                true => String::new(),
                false => self.origin(host)?.unwrap_or_default(),
            };
            let hold = match p.hold {
                Some(lease) if !p.urls.is_empty() => {
                    self.puts += 1;
                    Some((format!("{}:p{}", self.holder, self.puts), lease))
                }
                _ => None,
            };
            let (keys, args, parts) = groups.entry(host_group(host)).or_default();
            keys.extend(self.host_keys(host).0);
            let mut part = p.arguments(hold.as_ref(), &origin);
            push(args, &part.len());
            args.append(&mut part);
            parts.push((host, p.urls.len(), hold.map(|(t, _)| (t, p.urls))));
        }
        let mut by_group = Vec::with_capacity(groups.len());
        self.calls += 1;
        for (group, (keys, args, parts)) in groups {
            let answer = format!(
                "{}:answer:{}",
                tag(&self.crawl, &format!("qg{group}")),
                self.holder
            );
            let mut cmd = redis::cmd("EVALSHA");
            cmd.arg(self.put.get_hash())
                .arg(keys.len() + 1)
                .arg(&keys[..])
                .arg(answer)
                .arg(self.calls)
                .arg(ROWS_PER_BUCKET)
                .arg(&args[..]);
            cmds.push(cmd);
            by_group.push(parts);
        }
        cmds.extend(put.rest);
        // The hosts are listed before their rows are queued: on a cluster, where the two
        // live on different nodes, as a stage before.
        let (listed, rows) = cmds.split_at(first);
        let answers = self.link.run_keyed(&[listed, rows], &[&self.put])?;
        let mut done = Vec::new();
        for (parts, v) in by_group.into_iter().zip(answers.into_iter().skip(first)) {
            let each: Vec<(usize, usize, Vec<u8>)> = redis::from_redis_value(v).unwrap_or_default();
            for ((h, offered, hold), (queued, settled, blob)) in parts.into_iter().zip(
                each.into_iter()
                    .chain(std::iter::repeat_with(Default::default)),
            ) {
                let held = match hold {
                    Some((token, urls)) => held_rows(h, &token, &urls, &blob),
                    None => Vec::new(),
                };
                done.push((
                    h,
                    PutDone {
                        queued,
                        held,
                        settled,
                        offered,
                    },
                ));
            }
        }
        Ok(done)
    }

    /// Takes up to `n` rows of `host`, best first, for `lease`; rows whose earlier lease
    /// expired (their taker died) come back first.
    pub fn take(
        &mut self,
        host: HostId,
        n: usize,
        lease: Duration,
    ) -> Result<Vec<Taken>, FleetError> {
        self.takes += 1;
        let token = format!("{}:{}", self.holder, self.takes);
        let k = self.host_keys(host);
        let origin = self.origin(host)?.unwrap_or_default();
        let script = &self.take;
        let flat: Vec<Vec<u8>> = self.link.run(|con| {
            script
                .key(&k.0[..])
                .arg(n)
                .arg(lease.as_millis() as u64)
                .arg(&token)
                .invoke(con)
        })?;
        Ok(flat
            .chunks(3)
            .filter_map(|c| match c {
                [fp, cash, row] => Some(Taken {
                    job: parse(host, &origin, fp, cash, row)?,
                    token: token.clone(),
                }),
                _ => None,
            })
            .collect())
    }

    /// Settles a taken URL: done, or back in the queue (with one more attempt for a retry).
    /// Returns false when its lease had expired (another process may have it now).
    pub fn settle(&mut self, host: HostId, taken: &Taken, how: Settle) -> Result<bool, FleetError> {
        let mut put = Put::default();
        put.settle(host, std::slice::from_ref(taken), how);
        Ok(self.send(put)?.first().is_some_and(|(_, d)| d.settled == 1))
    }

    /// Settles URLs of `host` as done, in one round trip; returns how many were still taken.
    pub fn settle_done(&mut self, host: HostId, taken: &[Taken]) -> Result<usize, FleetError> {
        let mut put = Put::default();
        put.settle(host, taken, Settle::Done);
        Ok(self.send(put)?.iter().map(|(_, d)| d.settled).sum())
    }

    /// Puts rows taken here back in the queue, their hosts listed among those with work
    /// first: what a put took for this process for a host it let go meanwhile.
    pub(crate) fn give_back(&mut self, rows: Vec<(HostId, Vec<Taken>)>) -> Result<(), FleetError> {
        let key = self.crawl_key("active");
        let mut put = Put::default();
        for (host, taken) in &rows {
            self.link.run(|con| {
                redis::cmd("ZADD")
                    .arg(&key)
                    .arg("NX")
                    .arg(0)
                    .arg(host.0)
                    .query::<()>(con)
            })?;
            put.settle(*host, taken, Settle::Return);
        }
        self.send(put)?;
        Ok(())
    }

    /// Puts back every URL of `host` some process took, and returns how many: for the
    /// process that has just become the host's only taker (see `process`).
    pub(crate) fn reclaim(&mut self, host: HostId) -> Result<usize, FleetError> {
        let [queue, _, _, taken, holders] = &self.host_keys(host).0;
        let script = &self.reclaim;
        self.link
            .run(|con| script.key(queue).key(taken).key(holders).invoke(con))
    }

    /// URLs of `host` waiting (not taken).
    pub fn queued(&mut self, host: HostId) -> Result<u64, FleetError> {
        let [queue, ..] = self.host_keys(host).0;
        self.link
            .run(|con| redis::cmd("ZCARD").arg(&queue).query(con))
    }

    /// Up to `n` hosts with work, best first by the cash of the best URL they were offered.
    pub(crate) fn active(&mut self, n: usize) -> Result<Vec<HostId>, FleetError> {
        let key = self.crawl_key("active");
        let ids: Vec<i64> = self.link.run(|con| {
            redis::cmd("ZRANGE")
                .arg(&key)
                .arg(0)
                .arg(n.saturating_sub(1))
                .arg("REV")
                .query(con)
        })?;
        Ok(ids.into_iter().map(HostId).collect())
    }

    /// Takes a host whose queue looks empty off the list of hosts with work, unless a row
    /// arrived meanwhile: then it stays listed and the count of its rows is returned.
    /// Offers list a host before queueing, so a row is never left unlisted.
    pub(crate) fn retire(&mut self, host: HostId) -> Result<u64, FleetError> {
        let key = self.crawl_key("active");
        self.link
            .run(|con| redis::cmd("ZREM").arg(&key).arg(host.0).query::<()>(con))?;
        let left = self.queued(host)?;
        if left > 0 {
            self.link.run(|con| {
                redis::cmd("ZADD")
                    .arg(&key)
                    .arg(0)
                    .arg(host.0)
                    .query::<()>(con)
            })?;
        }
        Ok(left)
    }

    /// Drops a host's queue for good (it is given up on, for the reason saved beside it). Its
    /// rows stay: they are its seen-set, so nothing found later queues its URLs again.
    pub(crate) fn drop_host(&mut self, host: HostId, reason: &str) -> Result<(), FleetError> {
        let [queue, _, _, taken, holders] = self.host_keys(host).0;
        let (active, skipped) = (self.crawl_key("active"), self.crawl_key("skipped"));
        self.link.run(|con| {
            redis::cmd("HSET")
                .arg(&skipped)
                .arg(host.0)
                .arg(reason)
                .query::<()>(con)
        })?;
        self.link.run(|con| {
            redis::cmd("DEL")
                .arg(&queue)
                .arg(&taken)
                .arg(&holders)
                .query::<()>(con)
        })?;
        self.link
            .run(|con| redis::cmd("ZREM").arg(&active).arg(host.0).query::<()>(con))
    }

    /// Why a host is not crawled by this crawl, if a process gave it up.
    pub(crate) fn skipped(&mut self, host: HostId) -> Result<Option<String>, FleetError> {
        let key = self.crawl_key("skipped");
        self.link
            .run(|con| redis::cmd("HGET").arg(&key).arg(host.0).query(con))
    }
}

impl Put {
    /// Offers `urls` to `host`'s queue (see [`SharedQueue::offer`]).
    pub(crate) fn offer(&mut self, host: HostId, mut urls: Vec<NewUrl>) {
        self.hosts.entry(host).or_default().urls.append(&mut urls);
    }

    /// Has the URLs new to the crawl among those offered to `host` taken by this process under
    /// `lease` (see [`SharedQueue::offer_held`]).
    pub(crate) fn hold(&mut self, host: HostId, lease: Duration) {
        self.hosts.entry(host).or_default().hold = Some(lease);
    }

    /// Pays `cash` to queued URLs of `host` (see [`SharedQueue::deposit`]).
    pub(crate) fn deposit(&mut self, host: HostId, mut cash: Vec<(Fp, f64)>) {
        self.hosts.entry(host).or_default().cash.append(&mut cash);
    }

    /// Settles rows of `host` taken here (see [`SharedQueue::settle`]).
    pub(crate) fn settle(&mut self, host: HostId, taken: &[Taken], how: Settle) {
        let how = match how {
            Settle::Done => "done",
            Settle::Retry => "retry",
            Settle::Return => "return",
        };
        let mut by_token: std::collections::BTreeMap<&str, Vec<Fp>> = Default::default();
        for t in taken {
            by_token.entry(&t.token).or_default().push(t.job.fp);
        }
        let settles = &mut self.hosts.entry(host).or_default().settles;
        for (token, fps) in by_token {
            settles.push((token.to_string(), how, fps));
        }
    }

    /// How many host parts the put has, and how many of them only pay cash.
    pub(crate) fn parts(&self) -> (usize, usize) {
        let alone = self
            .hosts
            .values()
            .filter(|p| p.urls.is_empty() && p.hold.is_none() && p.settles.is_empty())
            .count();
        (self.hosts.len(), alone)
    }

    /// The hosts offered URLs.
    pub(crate) fn offered(&self) -> Vec<HostId> {
        self.hosts
            .iter()
            .filter(|(_, p)| !p.urls.is_empty())
            .map(|(h, _)| *h)
            .collect()
    }

    /// Adds a command of the caller's, on its own keys.
    pub(crate) fn cmd(&mut self, cmd: redis::Cmd) {
        self.rest.push(cmd);
    }
}

/// The URLs a put took for this process under `token`, from the script's answer (24 bytes
/// each: fingerprint, cash, row number) and what was offered; an answer that does not fit is
/// no row of ours.
fn held_rows(host: HostId, token: &str, offered: &[NewUrl], blob: &[u8]) -> Vec<Taken> {
    let mut first: std::collections::HashMap<Fp, &NewUrl> = Default::default();
    for u in offered {
        first.entry(u.fp).or_insert(u);
    }
    blob.chunks_exact(24)
        .filter_map(|c| {
            let (fp, rest) = c.split_at(8);
            let (cash, seq) = rest.split_at(8);
            let fp = Fp(u64::from_be_bytes(fp.try_into().ok()?));
            let cash = f64::from_be_bytes(cash.try_into().ok()?);
            let seq = f64::from_be_bytes(seq.try_into().ok()?);
            let u = first.get(&fp)?;
            Some(Taken {
                job: Queued {
                    seq: seq as i64,
                    host,
                    url: u.url.clone(),
                    fp,
                    depth: u.depth,
                    hops: u.hops,
                    attempts: 0,
                    priority: cash,
                    revisit: u.revisit,
                },
                token: token.to_string(),
            })
        })
        .collect()
}

/// A fingerprint as a member or field: its 8 bytes.
fn member(fp: Fp) -> [u8; 8] {
    fp.0.to_be_bytes()
}

/// A URL as a row keeps it: without `origin` when it starts with it.
fn relative<'a>(url: &'a str, origin: &str) -> &'a str {
    match url.strip_prefix(origin) {
        Some(rest) if !origin.is_empty() && rest.starts_with('/') => rest,
        _ => url,
    }
}

/// Checks that the crawl's keys follow this build's layout, and marks a new crawl's.
fn check_layout(link: &mut RedisLink, url: &str, crawl: &str) -> Result<(), FleetError> {
    let c = super::tag(crawl, "crawl");
    let keys = [format!("{c}:layout"), format!("{c}:host_ids")];
    let script = Script::new(scripts::LAYOUT_OF);
    let found: String = link.run(|con| script.key(&keys[..]).arg(LAYOUT).invoke(con))?;
    if found == LAYOUT {
        return Ok(());
    }
    Err(FleetError::Layout {
        url: super::shown(url),
        crawl: crawl.to_string(),
        found,
    })
}

/// A URL read back from its fingerprint, cash and row (`seq \t depth \t hops \t attempts \t
/// revisit \t url`, the URL without `origin` when it starts with `/`); none if it is not one
/// of ours.
fn parse(host: HostId, origin: &str, fp: &[u8], cash: &[u8], row: &[u8]) -> Option<Queued> {
    let fp = Fp(u64::from_be_bytes(fp.try_into().ok()?));
    let cash = std::str::from_utf8(cash).ok()?;
    let row = std::str::from_utf8(row).ok()?;
    let mut f = row.splitn(6, '\t');
    let seq = i64::from_str_radix(f.next()?, 16).ok()?;
    let depth = f.next()?.parse().ok()?;
    let hops = f.next()?.parse().ok()?;
    let attempts = f.next()?.parse().ok()?;
    let revisit = f.next()? == "1";
    let url = match f.next()? {
        path if path.starts_with('/') && !origin.is_empty() => format!("{origin}{path}"),
        path if path.starts_with('/') => return None,
        url => url.to_string(),
    };
    Some(Queued {
        seq,
        host,
        url,
        fp,
        depth,
        hops,
        attempts,
        priority: cash.parse().ok()?,
        revisit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_reads_back_as_written() {
        let fp = member(Fp(u64::MAX - 1));
        let row = b"ff\t3\t1\t2\t1\thttp://e.test/a\tb";
        let q = parse(HostId(7), "http://o.test", &fp, b"0.5", row).unwrap();
        assert_eq!((q.seq, q.priority, q.fp), (255, 0.5, Fp(u64::MAX - 1)));
        assert_eq!((q.depth, q.hops, q.attempts, q.revisit), (3, 1, 2, true));
        assert_eq!(q.url, "http://e.test/a\tb", "a URL keeps what follows");
        assert!(parse(HostId(7), "", &fp, b"0.5", b"garbage").is_none());
        assert!(
            parse(HostId(7), "", b"short", b"0.5", row).is_none(),
            "not a fingerprint"
        );
    }

    #[test]
    fn a_url_is_kept_without_its_host_s_origin_and_read_back_with_it() {
        let origin = "http://e.test:8080";
        for url in [
            "http://e.test:8080/a/b?c",
            "http://e.test:8080/",
            "http://e.test:80801/a",
            "https://e.test:8080/a",
            "http://other.test/a",
        ] {
            let kept = relative(url, origin);
            assert_eq!(
                kept.starts_with('/'),
                url.starts_with("http://e.test:8080/")
            );
            let row = format!("1\t0\t0\t0\t0\t{kept}");
            let q = parse(HostId(1), origin, &member(Fp(1)), b"1", row.as_bytes()).unwrap();
            assert_eq!(q.url, url);
        }
        assert_eq!(relative("http://e.test/a", ""), "http://e.test/a");
    }
}
