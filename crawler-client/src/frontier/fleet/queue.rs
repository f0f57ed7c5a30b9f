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
//! - `{C:ID}:seq` (counter): the host's rows are numbered in arrival order.
//! - `{C:ID}:seen` (set of fingerprints as integers): the host's seen-set. Kept per host so that
//!   "seen? then queue" is one script in one slot: no crash between the two can lose a URL or
//!   queue it twice.
//! - `{C:ID}:queue` (sorted set): a row is `seq \t priority \t fp \t depth \t hops \t attempts
//!   \t revisit \t url`, scored by minus its priority; rows of one priority come out in the
//!   order of their zero-padded `seq`, that is of arrival.
//! - `{C:ID}:taken` (sorted set): rows handed out, as `token \n row`, scored by their lease's
//!   expiry (server ms).

use super::link::Link;
use super::{FleetError, connect, tag};
use crate::ids::{Fp, HostId};
use crate::state::{NewUrl, Queued};
use redis::Script;
use std::time::Duration;

/// Queues the URLs not seen yet: KEYS = [seen, queue, seq]; ARGV = per URL: fp, priority,
/// depth, hops, revisit, url. A revisit is queued even when seen. Returns how many were
/// queued.
const OFFER: &str = r"
local seq = tonumber(redis.call('GET', KEYS[3]) or '0')
local queued = 0
for i = 1, #ARGV, 6 do
  local fp, prio, revisit = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 4]
  if redis.call('SADD', KEYS[1], fp) == 1 or revisit == '1' then
    seq = seq + 1
    local row = string.format('%010x', seq) .. '\t' .. ARGV[i + 1] .. '\t' .. fp .. '\t' ..
      ARGV[i + 2] .. '\t' .. ARGV[i + 3] .. '\t0\t' .. revisit .. '\t' .. ARGV[i + 5]
    redis.call('ZADD', KEYS[2], -prio, row)
    queued = queued + 1
  end
end
redis.call('SET', KEYS[3], seq)
return queued
";

/// Takes rows: KEYS = [queue, taken]; ARGV = [n, lease ms, token]. Rows whose lease expired
/// go back to the queue first. A taken row is kept as `token \n row`, so that a taker whose
/// lease expired cannot settle the row another took since. Returns the rows taken, best first.
const TAKE: &str = concat!(
    server_now!(),
    r"local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, held in ipairs(expired) do
  redis.call('ZREM', KEYS[2], held)
  local row = string.sub(held, string.find(held, '\n', 1, true) + 1)
  local prio = tonumber(string.match(row, '^[^\t]*\t([^\t]*)'))
  redis.call('ZADD', KEYS[1], -prio, row)
end
local rows = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
for _, row in ipairs(rows) do
  redis.call('ZREM', KEYS[1], row)
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[3] .. '\n' .. row)
end
return rows
"
);

/// Settles a taken row: KEYS = [queue, taken]; ARGV = [`token \n row`, row to queue again or
/// '']. Returns whether the row was still taken (its lease had not expired).
const SETTLE: &str = r"
local held = redis.call('ZREM', KEYS[2], ARGV[1])
if held == 1 and ARGV[2] ~= '' then
  local prio = tonumber(string.match(ARGV[2], '^[^\t]*\t([^\t]*)'))
  redis.call('ZADD', KEYS[1], -prio, ARGV[2])
end
return held
";

/// Puts every taken row back in the queue, whoever took it: KEYS = [queue, taken]. Run by a
/// process that has just become the host's only taker. Returns how many came back.
const RECLAIM: &str = r"
local held = redis.call('ZRANGE', KEYS[2], 0, -1)
for _, h in ipairs(held) do
  local row = string.sub(h, string.find(h, '\n', 1, true) + 1)
  local prio = tonumber(string.match(row, '^[^\t]*\t([^\t]*)'))
  redis.call('ZADD', KEYS[1], -prio, row)
end
redis.call('DEL', KEYS[2])
return #held
";

/// Gives a host its id: KEYS = [hosts, host_ids, origins]; ARGV = [origin].
const HOST_ID: &str = r"
local id = redis.call('HGET', KEYS[1], ARGV[1])
if id then return tonumber(id) end
id = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1], id)
redis.call('HSET', KEYS[3], id, ARGV[1])
return id
";

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

/// A row handed out: the URL, and the row itself to settle it by.
#[derive(Debug, Clone, PartialEq)]
pub struct Taken {
    /// The URL as the crawl loop sees it.
    pub job: Queued,
    row: String,
    token: String,
}

/// The shared queue of one crawl, over one connection (a process holds one).
pub struct SharedQueue {
    link: Link,
    crawl: String,
    holder: String,
    takes: u64,
    offer: Script,
    take: Script,
    settle: Script,
    reclaim: Script,
    host_id: Script,
}

impl SharedQueue {
    /// Connects to the frontier at `url` for crawl `crawl` (see
    /// [`super::leases::HostLeases::connect`]); `holder` names this process in its leases.
    pub fn connect(url: &str, crawl: &str, holder: &str) -> Result<SharedQueue, FleetError> {
        Ok(SharedQueue {
            link: connect(url, crawl)?,
            crawl: crawl.to_string(),
            holder: holder.to_string(),
            takes: 0,
            offer: Script::new(OFFER),
            take: Script::new(TAKE),
            settle: Script::new(SETTLE),
            reclaim: Script::new(RECLAIM),
            host_id: Script::new(HOST_ID),
        })
    }

    /// The connection, to wait out a pause with Ctrl-C.
    pub fn link(&mut self) -> &mut Link {
        &mut self.link
    }

    fn host_keys(&self, host: HostId) -> (String, String, String) {
        let tag = tag(&self.crawl, &host.to_string());
        (
            format!("{tag}:seen"),
            format!("{tag}:queue"),
            format!("{tag}:taken"),
        )
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
        Ok(HostId(id))
    }

    /// The origin of a host id any process gave out.
    pub fn origin(&mut self, host: HostId) -> Result<Option<String>, FleetError> {
        let key = self.crawl_key("origins");
        self.link
            .run(|con| redis::cmd("HGET").arg(&key).arg(host.0).query(con))
    }

    /// Queues the URLs of `host` no process has seen (and every revisit); returns how many.
    /// Their `seq` and `host` are not used: rows are numbered per host, in arrival order. The host is listed
    /// among those with work first, so that no crash can leave queued rows unlisted.
    pub fn offer(&mut self, host: HostId, urls: &[NewUrl]) -> Result<usize, FleetError> {
        if urls.is_empty() {
            return Ok(0);
        }
        let best = urls.iter().map(|u| u.priority).fold(f64::MIN, f64::max);
        let active = self.crawl_key("active");
        self.link.run(|con| {
            redis::cmd("ZADD")
                .arg(&active)
                .arg("GT")
                .arg(best)
                .arg(host.0)
                .query::<()>(con)
        })?;
        let (seen, queue, _) = self.host_keys(host);
        let seq = format!("{}:seq", tag(&self.crawl, &host.to_string()));
        let script = &self.offer;
        self.link.run(|con| {
            let mut invocation = script.key(&seen);
            invocation.key(&queue).key(&seq);
            for u in urls {
                invocation
                    .arg(u.fp.0 as i64)
                    .arg(u.priority)
                    .arg(u.depth)
                    .arg(u.hops)
                    .arg(if u.revisit { "1" } else { "0" })
                    .arg(&u.url);
            }
            invocation.invoke(con)
        })
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
        let (_, queue, taken) = self.host_keys(host);
        let script = &self.take;
        let rows: Vec<String> = self.link.run(|con| {
            script
                .key(&queue)
                .key(&taken)
                .arg(n)
                .arg(lease.as_millis() as u64)
                .arg(&token)
                .invoke(con)
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                Some(Taken {
                    job: parse(host, &row)?,
                    row,
                    token: token.clone(),
                })
            })
            .collect())
    }

    /// Settles a taken row: done, or back in the queue (with one more attempt for a retry).
    /// Returns false when its lease had expired (another process may have it now).
    pub fn settle(&mut self, host: HostId, taken: &Taken, how: Settle) -> Result<bool, FleetError> {
        let (_, queue, held) = self.host_keys(host);
        let again = match how {
            Settle::Done => String::new(),
            Settle::Return => taken.row.clone(),
            Settle::Retry => {
                let mut fields: Vec<&str> = taken.row.split('\t').collect();
                let attempts = (taken.job.attempts + 1).to_string();
                if fields.len() == 8 {
                    fields[5] = &attempts;
                }
                fields.join("\t")
            }
        };
        let member = format!("{}\n{}", taken.token, taken.row);
        let script = &self.settle;
        let held: i64 = self.link.run(|con| {
            script
                .key(&queue)
                .key(&held)
                .arg(&member)
                .arg(&again)
                .invoke(con)
        })?;
        Ok(held == 1)
    }

    /// Settles rows of `host` as done, in one call; returns how many were still taken.
    pub fn settle_done(&mut self, host: HostId, taken: &[Taken]) -> Result<usize, FleetError> {
        if taken.is_empty() {
            return Ok(0);
        }
        let (_, _, held) = self.host_keys(host);
        let members: Vec<String> = taken
            .iter()
            .map(|t| format!("{}\n{}", t.token, t.row))
            .collect();
        self.link
            .run(|con| redis::cmd("ZREM").arg(&held).arg(&members).query(con))
    }

    /// Puts back every row of `host` some process took, and returns how many: for the
    /// process that has just become the host's only taker (see `claims`).
    pub fn reclaim(&mut self, host: HostId) -> Result<usize, FleetError> {
        let (_, queue, taken) = self.host_keys(host);
        let script = &self.reclaim;
        self.link
            .run(|con| script.key(&queue).key(&taken).invoke(con))
    }

    /// URLs of `host` waiting (not taken).
    pub fn queued(&mut self, host: HostId) -> Result<u64, FleetError> {
        let (_, queue, _) = self.host_keys(host);
        self.link
            .run(|con| redis::cmd("ZCARD").arg(&queue).query(con))
    }

    /// Up to `n` hosts with work, best first by the cash of the best URL they were offered.
    pub fn active(&mut self, n: usize) -> Result<Vec<HostId>, FleetError> {
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

    /// Hosts with work, fleet-wide.
    pub fn active_len(&mut self) -> Result<u64, FleetError> {
        let key = self.crawl_key("active");
        self.link
            .run(|con| redis::cmd("ZCARD").arg(&key).query(con))
    }

    /// Takes a host whose queue looks empty off the list of hosts with work, unless a row
    /// arrived meanwhile: then it stays listed and the count of its rows is returned.
    /// Offers list a host before queueing, so a row is never left unlisted.
    pub fn retire(&mut self, host: HostId) -> Result<u64, FleetError> {
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

    /// Drops a host's queue for good (it is given up on, for the reason saved beside it).
    pub fn drop_host(&mut self, host: HostId, reason: &str) -> Result<(), FleetError> {
        let (_, queue, taken) = self.host_keys(host);
        let (active, skipped) = (self.crawl_key("active"), self.crawl_key("skipped"));
        self.link.run(|con| {
            redis::cmd("HSET")
                .arg(&skipped)
                .arg(host.0)
                .arg(reason)
                .query::<()>(con)
        })?;
        self.link
            .run(|con| redis::cmd("DEL").arg(&queue).arg(&taken).query::<()>(con))?;
        self.link
            .run(|con| redis::cmd("ZREM").arg(&active).arg(host.0).query::<()>(con))
    }

    /// Why a host is not crawled by this crawl, if a process gave it up.
    pub fn skipped(&mut self, host: HostId) -> Result<Option<String>, FleetError> {
        let key = self.crawl_key("skipped");
        self.link
            .run(|con| redis::cmd("HGET").arg(&key).arg(host.0).query(con))
    }
}

/// A row read back; none if it is not one of ours.
fn parse(host: HostId, row: &str) -> Option<Queued> {
    let mut f = row.splitn(8, '\t');
    let seq = i64::from_str_radix(f.next()?, 16).ok()?;
    let priority = f.next()?.parse().ok()?;
    let fp = Fp(f.next()?.parse::<i64>().ok()? as u64);
    let depth = f.next()?.parse().ok()?;
    let hops = f.next()?.parse().ok()?;
    let attempts = f.next()?.parse().ok()?;
    let revisit = f.next()? == "1";
    let url = f.next()?.to_string();
    Some(Queued {
        seq,
        host,
        url,
        fp,
        depth,
        hops,
        attempts,
        priority,
        revisit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_reads_back_as_written() {
        let row = "00000000000000ff\t0.5\t-2\t3\t1\t2\t1\thttp://e.test/a\tb";
        let q = parse(HostId(7), row).unwrap();
        assert_eq!((q.seq, q.priority, q.fp), (255, 0.5, Fp(u64::MAX - 1)));
        assert_eq!((q.depth, q.hops, q.attempts, q.revisit), (3, 1, 2, true));
        assert_eq!(q.url, "http://e.test/a\tb", "a URL keeps what follows");
        assert!(parse(HostId(7), "garbage").is_none());
    }
}
