//! Host leases shared by every process of a crawl, in Redis (one server or a Redis Cluster):
//! the politeness invariant of a fleet. A process may contact a host only under a lease;
//! a host has no more leases than its connection limit, and none is granted before the host's
//! next allowed time, whichever process set it. A lease has an expiry: a process that dies
//! holding one blocks the host only until then, and the host then also waits its delay, as
//! the dead process could not say when its request ended.
//!
//! Times are the Redis server's (`TIME` inside the scripts), so the clocks of the machines of
//! a fleet need not agree. A host's lease keys carry the hash tag of one of [`GROUPS`] groups,
//! `{C:lgN}:leases:HOST` and `{C:lgN}:next:HOST`, so that each script touches one slot of a
//! cluster and a process renews every lease it holds in a group with one call: one call per
//! lease cost Redis a script call per host held every 10 s, as many as a polite crawl of
//! thousands of hosts makes for its pages.

use super::redis_link::RedisLink;
use super::{FleetError, connect};
use redis::Script;
use std::collections::HashMap;
use std::time::Duration;

/// The groups a crawl's host leases are spread over: enough to spread them over a cluster's
/// masters, few enough that a renewal of thousands of leases is a few dozen calls.
pub(crate) const GROUPS: u64 = 32;

/// The keys of `host`'s leases and next allowed time in crawl `crawl` (`host` is its
/// politeness key: a host id, or `ip:ADDRESS`).
pub(crate) fn lease_keys(crawl: &str, host: &str) -> (String, String) {
    let tag = super::tag(crawl, &format!("lg{}", group_of(host)));
    (format!("{tag}:leases:{host}"), format!("{tag}:next:{host}"))
}

/// The group of `host`'s lease keys.
fn group_of(host: &str) -> u64 {
    // xxh3 rather than std's hasher: every build of a fleet must put a host in one group.
    xxhash_rust::xxh3::xxh3_64(host.as_bytes()) % GROUPS
}

/// What a request for a lease got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// The lease, under this token (to release it with).
    Granted(String),
    /// The host's next allowed time is this far away.
    Wait(Duration),
    /// The host has as many leases as its connection limit.
    Busy,
}

/// Takes a lease: KEYS = [leases, next]; ARGV = [limit, lease ms, token, delay ms after an
/// expired lease]. Returns {1, 0} granted, {0, ms} wait, {0, -1} busy. A token already
/// holding the lease was granted by this call sent before, whose answer was lost with its
/// connection: granted again, rather than busy behind itself until the lease expires.
const ACQUIRE: &str = concat!(
    server_now!(),
    r"if redis.call('ZSCORE', KEYS[1], ARGV[3]) then return {1, 0} end
local expired = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local next = tonumber(redis.call('GET', KEYS[2]) or '0')
if expired > 0 and next < now + tonumber(ARGV[4]) then
  next = now + tonumber(ARGV[4])
  redis.call('SET', KEYS[2], next)
end
if next > now then return {0, next - now} end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return {0, -1} end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
return {1, 0}
"
);

/// Gives a lease back: KEYS = [leases, next]; ARGV = [token, delay ms]. The host's next
/// allowed time becomes at least now plus the delay. Returns whether the lease was held.
const RELEASE: &str = concat!(
    server_now!(),
    r"local held = redis.call('ZREM', KEYS[1], ARGV[1])
local next = now + tonumber(ARGV[2])
if next > tonumber(redis.call('GET', KEYS[2]) or '0') then
  redis.call('SET', KEYS[2], next)
end
return held
"
);

/// Extends a lease held: KEYS = [leases]; ARGV = [token, lease ms]. Returns whether it was
/// still held.
const RENEW: &str = concat!(
    server_now!(),
    r"return redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[1])
"
);

/// Extends leases held in one group: KEYS = their leases keys; ARGV = [lease ms, a token per
/// key]. Returns, per key, whether its lease was still held.
const RENEW_MANY: &str = concat!(
    server_now!(),
    r"local expiry, held = now + tonumber(ARGV[1]), {}
for i = 1, #KEYS do
  held[i] = redis.call('ZADD', KEYS[i], 'XX', 'CH', expiry, ARGV[i + 1])
end
return held
"
);

/// The host leases of one crawl, over one connection (a process holds one).
pub struct HostLeases {
    link: RedisLink,
    crawl: String,
    holder: String,
    issued: u64,
    acquire: Script,
    release: Script,
    renew: Script,
    renew_many: Script,
}

impl HostLeases {
    /// Connects to the frontier at `url` (`redis://HOST:PORT/DB`, or
    /// `redis+cluster://H1:P1,H2:P2,...` for a Redis Cluster) for crawl `crawl`; `holder`
    /// names this process in its tokens.
    pub fn connect(url: &str, crawl: &str, holder: &str) -> Result<HostLeases, FleetError> {
        let link = connect(url, crawl)?;
        Ok(HostLeases {
            link,
            crawl: crawl.to_string(),
            holder: holder.to_string(),
            issued: 0,
            acquire: Script::new(ACQUIRE),
            release: Script::new(RELEASE),
            renew: Script::new(RENEW),
            renew_many: Script::new(RENEW_MANY),
        })
    }

    /// The connection, to wait out a pause with Ctrl-C.
    pub(crate) fn link(&mut self) -> &mut super::redis_link::RedisLink {
        &mut self.link
    }

    /// The keys of a host's leases and next allowed time: one hash tag, one slot.
    fn keys(&self, host: &str) -> (String, String) {
        lease_keys(&self.crawl, host)
    }

    /// Asks for a lease on `host` (its politeness key: an origin, or a server address) for
    /// `lease`, with at most `limit` held at once; `expired_delay` is the wait imposed after a
    /// lease that expired unreleased.
    pub fn acquire(
        &mut self,
        host: &str,
        limit: usize,
        lease: Duration,
        expired_delay: Duration,
    ) -> Result<Grant, FleetError> {
        self.issued += 1;
        let token = format!("{}:{}", self.holder, self.issued);
        let (leases, next) = self.keys(host);
        let script = &self.acquire;
        let (granted, wait): (i64, i64) = self.link.run(|con| {
            script
                .key(&leases)
                .key(&next)
                .arg(limit.max(1))
                .arg(lease.as_millis() as u64)
                .arg(&token)
                .arg(expired_delay.as_millis() as u64)
                .invoke(con)
        })?;
        Ok(match (granted, wait) {
            (1, _) => Grant::Granted(token),
            (_, w) if w >= 0 => Grant::Wait(Duration::from_millis(w as u64)),
            _ => Grant::Busy,
        })
    }

    /// Gives a lease back; the host may be contacted again no sooner than `delay` from now.
    /// Returns whether the lease was still held (not expired and taken over).
    pub fn release(
        &mut self,
        host: &str,
        token: &str,
        delay: Duration,
    ) -> Result<bool, FleetError> {
        let (leases, next) = self.keys(host);
        let script = &self.release;
        let held: i64 = self.link.run(|con| {
            script
                .key(&leases)
                .key(&next)
                .arg(token)
                .arg(delay.as_millis() as u64)
                .invoke(con)
        })?;
        Ok(held == 1)
    }

    /// Extends the leases `held` (host, token) to `lease` from now, with one call per group
    /// in one round trip (one per node of a cluster); says for each whether it was still held.
    pub fn renew_many(
        &mut self,
        held: &[(String, String)],
        lease: Duration,
    ) -> Result<Vec<bool>, FleetError> {
        // Per group: positions in `held`.
        let mut groups: HashMap<u64, Vec<usize>> = HashMap::new();
        for (i, (host, _)) in held.iter().enumerate() {
            groups.entry(group_of(host)).or_default().push(i);
        }
        let keys: Vec<String> = held.iter().map(|(host, _)| self.keys(host).0).collect();
        let groups: Vec<Vec<usize>> = groups.into_values().collect();
        let cmds: Vec<redis::Cmd> = groups
            .iter()
            .map(|at| {
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(self.renew_many.get_hash()).arg(at.len());
                for &i in at {
                    cmd.arg(&keys[i]);
                }
                cmd.arg(lease.as_millis() as u64);
                for &i in at {
                    cmd.arg(&held[i].1);
                }
                cmd
            })
            .collect();
        let answers = self.link.run_keyed(&[&cmds], &[&self.renew_many])?;
        let mut kept = vec![false; held.len()];
        for (at, answer) in groups.iter().zip(answers) {
            // An answer that is not one flag per lease says none of them was kept.
            let flags: Vec<i64> = redis::from_redis_value(answer).unwrap_or_default();
            if flags.len() == at.len() {
                for (&i, flag) in at.iter().zip(flags) {
                    kept[i] = flag == 1;
                }
            }
        }
        Ok(kept)
    }

    /// Extends a lease still held to `lease` from now; false when it had expired.
    pub fn renew(&mut self, host: &str, token: &str, lease: Duration) -> Result<bool, FleetError> {
        let (leases, _) = self.keys(host);
        let script = &self.renew;
        let changed: i64 = self.link.run(|con| {
            script
                .key(&leases)
                .arg(token)
                .arg(lease.as_millis() as u64)
                .invoke(con)
        })?;
        Ok(changed == 1)
    }
}
