//! A fleet split by owner (`--shard I/N`): each process owns the hosts whose name hashes to
//! its index, crawls them as a single process does (its own queue, seen-set and politeness,
//! in its own directory), and sends each link to another shard's host to that shard's inbox
//! in Redis, a saved batch's links to one shard as one list element. Redis then carries only
//! the links that cross shards, in bulk, where the leased fleet (`queue`) keeps every URL's
//! row and every page's settlement there.
//!
//! Keys, all under one hash tag `{C:shards}` (one slot of a cluster: the traffic is small):
//! - `:n` (string): the number of shards, fixed by the first process; another number is
//!   refused by name.
//! - `:member:I` (string, expiring after the fleet's lease, `fleet_lease`): the token of the
//!   process that is shard `I`, renewed every second; a second process for one index is
//!   refused while the first lives, and a `kill -9`ed one's restart waits out the lease.
//! - `:inbox:I` (list): elements of lines for shard `I` (see [`Entry`]), appended by the
//!   others, read in order by `I` and trimmed once its state has saved what they said.
//! - `:trimmed` (hash I -> count): elements shard `I` has trimmed, ever. The shard saves with
//!   each batch how many it had consumed (`shard_consumed`), so that after a `kill -9` between
//!   its save and its trim it skips the ones already saved instead of applying them twice.
//! - `:idle` (hash I -> 1): the shards with nothing to do and nothing in their inbox. Sending
//!   to a shard clears its mark in the same script, and the crawl is over when every shard is
//!   marked and every inbox empty, read in one script: no shard can be working then.

use super::redis_link::RedisLink;
use super::{FleetError, connect, tag};
use crate::ids::Fp;
use redis::Script;
use std::time::{Duration, Instant};

/// The most shards a fleet may split its hosts into.
pub(crate) const MAX_SHARDS: u32 = 1024;

/// The largest inbox element read: a saved batch's lines to one shard are far below it.
pub(crate) const MAX_ELEMENT: usize = 64 << 20;

/// Elements read from the inbox at a time.
const READ_AT_ONCE: isize = 64;

/// The shard of a host: its name (without scheme or port, lowercase) hashed, so that the
/// `http` and `https` origins of a name, and its ports, share one shard and one politeness.
pub fn owner(origin: &str, n: u32) -> u32 {
    let rest = origin.find("://").map_or(origin, |i| &origin[i + 3..]);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => rest.split([':', '/', '?', '#']).next().unwrap_or(rest),
    };
    let h = xxhash_rust::xxh3::xxh3_64(host.to_ascii_lowercase().as_bytes());
    (h % u64::from(n.max(1))) as u32
}

/// A line of an inbox element.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// `u DEPTH HOPS URL`: a link found to a host of the receiving shard.
    Url {
        /// The URL, as found.
        url: String,
        /// Links from a seed.
        depth: u32,
        /// Links from the last page of its own host.
        hops: u32,
    },
    /// `c FP CASH`: OPIC cash a page paid to a URL of the receiving shard (after the URL).
    Cash {
        /// The URL's fingerprint (16 hex digits).
        fp: Fp,
        /// The cash, finite and not negative.
        cash: f64,
    },
}

impl Entry {
    /// Appends the entry as one line.
    fn write(&self, out: &mut String) {
        use std::fmt::Write;
        let _ = match self {
            Entry::Url { url, depth, hops } => writeln!(out, "u {depth} {hops} {url}"),
            Entry::Cash { fp, cash } => writeln!(out, "c {:016x} {cash:e}", fp.0),
        };
    }

    /// Reads one line; `None` for a line this build does not understand.
    pub(crate) fn parse(line: &str) -> Option<Entry> {
        let mut f = line.splitn(4, ' ');
        match f.next()? {
            "u" => {
                let depth = f.next()?.parse().ok()?;
                let hops = f.next()?.parse().ok()?;
                let url = f.next()?;
                let ok = (url.starts_with("http://") || url.starts_with("https://"))
                    && !url.contains(|c: char| c.is_ascii_whitespace() || c.is_control());
                ok.then(|| Entry::Url {
                    url: url.to_string(),
                    depth,
                    hops,
                })
            }
            "c" => {
                let fp = f.next().filter(|h| h.len() == 16)?;
                let fp = Fp(u64::from_str_radix(fp, 16).ok()?);
                let cash: f64 = f.next()?.parse().ok()?;
                (f.next().is_none() && cash.is_finite() && cash >= 0.0)
                    .then_some(Entry::Cash { fp, cash })
            }
            _ => None,
        }
    }
}

/// What one read of the inbox gave: the entries understood, and the lines refused.
#[derive(Debug, Default)]
pub(crate) struct Read {
    /// In the order sent.
    pub(crate) entries: Vec<Entry>,
    /// Lines (or whole elements, too large or not text) refused, with the first reason.
    pub(crate) refused: usize,
    /// The first refused line, cut short, for the log.
    pub(crate) first_refused: Option<String>,
}

const CLAIM: &str = r"
local n = redis.call('SET', KEYS[1], ARGV[1], 'NX')
local have = redis.call('GET', KEYS[1])
if have ~= ARGV[1] then return {0, have} end
local held = redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3])
if held then return {1, have} end
if redis.call('GET', KEYS[2]) == ARGV[2] then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return {1, have}
end
return {2, have}
";

const RENEW: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
";

const LEAVE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
";

/// KEYS: idle, then the inboxes sent to; ARGV: per inbox, its shard and its element.
const SEND: &str = r"
for k = 2, #KEYS do
  redis.call('RPUSH', KEYS[k], ARGV[2 * k - 2])
  redis.call('HDEL', KEYS[1], ARGV[2 * k - 3])
end
return 1
";

/// KEYS: trimmed, this inbox; ARGV: this shard, elements to drop from the head.
const TRIM: &str = r"
redis.call('LTRIM', KEYS[2], ARGV[2], -1)
return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])
";

/// KEYS: idle, then every inbox in shard order; ARGV: this shard, the number of shards.
/// Marks this shard idle when its inbox is empty; answers 1 when every shard is marked and
/// every inbox empty.
const IDLE: &str = r"
local me = tonumber(ARGV[1])
if redis.call('LLEN', KEYS[me + 2]) == 0 then redis.call('HSET', KEYS[1], ARGV[1], 1) end
if redis.call('HLEN', KEYS[1]) < tonumber(ARGV[2]) then return 0 end
for k = 2, #KEYS do
  if redis.call('LLEN', KEYS[k]) > 0 then return 0 end
end
return 1
";

/// This process's place in a fleet split by owner, and the links it owes the others.
pub(crate) struct Shards {
    link: RedisLink,
    prefix: String,
    me: u32,
    of: u32,
    token: String,
    /// Lines for each shard, sent with the next batch.
    outbox: Vec<String>,
    /// Elements read since the last trim.
    read: usize,
    /// Elements trimmed ever, as Redis counted them.
    trimmed: u64,
    /// When the inbox is looked at next.
    next_read: Instant,
    /// When the membership is renewed next.
    next_beat: Instant,
    /// How long the membership lasts unrenewed.
    ttl: Duration,
    scripts: [Script; 6],
}

impl Shards {
    /// Joins crawl `crawl` on the frontier at `url` as shard `me` of `of`, its membership
    /// lasting `ttl` unrenewed; `consumed` is how many inbox elements this shard's saved state
    /// says it consumed (see the module).
    pub(crate) fn join(
        url: &str,
        crawl: &str,
        (me, of): (u32, u32),
        ttl: Duration,
        consumed: u64,
    ) -> Result<Shards, FleetError> {
        let link = connect(url, crawl)?;
        let token = format!(
            "{}:{}:{}",
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .unwrap_or_default()
                .trim(),
            std::process::id(),
            crate::clock::now_ms()
        );
        let mut s = Shards {
            link,
            prefix: tag(crawl, "shards"),
            me,
            of,
            token,
            outbox: vec![String::new(); of as usize],
            read: 0,
            trimmed: 0,
            next_read: Instant::now(),
            next_beat: Instant::now(),
            ttl: ttl.max(Duration::from_secs(2)),
            scripts: [CLAIM, RENEW, LEAVE, SEND, TRIM, IDLE].map(Script::new),
        };
        s.claim(url)?;
        let trimmed: Option<u64> = {
            let key = s.key("trimmed");
            let field = me;
            s.link
                .run(|con| redis::cmd("HGET").arg(&key).arg(field).query(con))?
        };
        s.trimmed = trimmed.unwrap_or(0);
        // Saved but not trimmed when the last run stopped: dropped now, not applied again.
        if consumed > s.trimmed {
            s.read = (consumed - s.trimmed) as usize;
            s.trim()?;
        }
        Ok(s)
    }

    fn key(&self, name: &str) -> String {
        format!("{}:{name}", self.prefix)
    }

    fn inbox(&self, shard: u32) -> String {
        self.key(&format!("inbox:{shard}"))
    }

    /// Fixes the number of shards (or checks it against the one fixed) and takes this index,
    /// waiting up to its lease for a process that held it and stopped without leaving.
    fn claim(&mut self, url: &str) -> Result<(), FleetError> {
        let keys = [self.key("n"), self.key(&format!("member:{}", self.me))];
        let until = Instant::now() + self.ttl + Duration::from_secs(2);
        loop {
            let script = &self.scripts[0];
            let (code, n): (i64, Option<String>) = self.link.run(|con| {
                script
                    .key(&keys[..])
                    .arg(self.of)
                    .arg(&self.token)
                    .arg(self.ttl.as_millis() as u64)
                    .invoke(con)
            })?;
            match code {
                1 => return Ok(()),
                0 => {
                    return Err(FleetError::Shards(format!(
                        "frontier {}: the crawl is split into {} shards, not {}",
                        super::shown(url),
                        n.unwrap_or_default(),
                        self.of
                    )));
                }
                _ if Instant::now() >= until => {
                    return Err(FleetError::Shards(format!(
                        "frontier {}: shard {} is held by another live process",
                        super::shown(url),
                        self.me
                    )));
                }
                _ => std::thread::sleep(Duration::from_millis(500)),
            }
        }
    }

    /// Whether this shard owns the host of `origin`.
    pub(crate) fn owns(&self, origin: &str) -> bool {
        owner(origin, self.of) == self.me
    }

    /// The shard owning the host of `origin`.
    pub(crate) fn owner_of(&self, origin: &str) -> u32 {
        owner(origin, self.of)
    }

    /// Queues `entry` for the shard owning `origin`, sent with the next batch.
    pub(crate) fn owe(&mut self, origin: &str, entry: &Entry) {
        self.owe_to(owner(origin, self.of), entry);
    }

    /// Queues `entry` for shard `to`, sent with the next batch.
    pub(crate) fn owe_to(&mut self, to: u32, entry: &Entry) {
        if let Some(out) = self.outbox.get_mut(to as usize) {
            entry.write(out);
        }
    }

    /// Whether lines wait to be sent.
    pub(crate) fn owing(&self) -> bool {
        self.outbox.iter().any(|o| !o.is_empty())
    }

    /// Sends every shard its lines, one element each, in one script.
    pub(crate) fn send(&mut self) -> Result<(), FleetError> {
        if !self.owing() {
            return Ok(());
        }
        let mut keys = vec![self.key("idle")];
        let mut args: Vec<Vec<u8>> = Vec::new();
        for (to, lines) in self.outbox.iter().enumerate() {
            if !lines.is_empty() {
                keys.push(self.inbox(to as u32));
                args.push(to.to_string().into_bytes());
                args.push(lines.as_bytes().to_vec());
            }
        }
        let script = &self.scripts[3];
        let _: i64 = self
            .link
            .run(|con| script.key(&keys[..]).arg(&args[..]).invoke(con))?;
        self.outbox.iter_mut().for_each(String::clear);
        Ok(())
    }

    /// When the inbox is due its next look (every 250 ms).
    pub(crate) fn read_due(&self) -> Instant {
        self.next_read
    }

    /// Reads the inbox's elements not read yet, up to [`READ_AT_ONCE`].
    pub(crate) fn read(&mut self) -> Result<Read, FleetError> {
        self.next_read = Instant::now() + Duration::from_millis(250);
        let key = self.inbox(self.me);
        let from = self.read as isize;
        let got: Vec<Vec<u8>> = self.link.run(|con| {
            redis::cmd("LRANGE")
                .arg(&key)
                .arg(from)
                .arg(from + READ_AT_ONCE - 1)
                .query(con)
        })?;
        self.read += got.len();
        let mut out = Read::default();
        for element in got {
            let text = match std::str::from_utf8(&element) {
                Ok(t) if element.len() <= MAX_ELEMENT => t,
                _ => {
                    out.refused += 1;
                    out.first_refused.get_or_insert_with(|| {
                        format!(
                            "an element of {} bytes, not text or too long",
                            element.len()
                        )
                    });
                    continue;
                }
            };
            for line in text.lines().filter(|l| !l.is_empty()) {
                match Entry::parse(line) {
                    Some(e) => out.entries.push(e),
                    None => {
                        out.refused += 1;
                        out.first_refused
                            .get_or_insert_with(|| line.chars().take(120).collect());
                    }
                }
            }
        }
        Ok(out)
    }

    /// Elements consumed ever, counting those read since the last trim: what the next saved
    /// batch records.
    pub(crate) fn consumed(&self) -> u64 {
        self.trimmed + self.read as u64
    }

    /// Drops the elements read from the inbox, once the state has saved what they said.
    pub(crate) fn trim(&mut self) -> Result<(), FleetError> {
        if self.read == 0 {
            return Ok(());
        }
        let keys = [self.key("trimmed"), self.inbox(self.me)];
        let script = &self.scripts[4];
        let n = self.read;
        let total: u64 = self
            .link
            .run(|con| script.key(&keys[..]).arg(self.me).arg(n).invoke(con))?;
        self.trimmed = total;
        self.read = 0;
        Ok(())
    }

    /// Says this shard has nothing to do (its lines sent); returns whether the whole crawl
    /// is over.
    pub(crate) fn idle(&mut self) -> Result<bool, FleetError> {
        let mut keys = vec![self.key("idle")];
        keys.extend((0..self.of).map(|i| self.inbox(i)));
        let script = &self.scripts[5];
        let done: i64 = self
            .link
            .run(|con| script.key(&keys[..]).arg(self.me).arg(self.of).invoke(con))?;
        Ok(done == 1)
    }

    /// Renews this shard's membership when due (every second).
    pub(crate) fn beat(&mut self) -> Result<(), FleetError> {
        if Instant::now() < self.next_beat {
            return Ok(());
        }
        self.next_beat = Instant::now() + Duration::from_secs(1);
        let key = self.key(&format!("member:{}", self.me));
        let script = &self.scripts[1];
        let held: i64 = self.link.run(|con| {
            script
                .key(&key)
                .arg(&self.token)
                .arg(self.ttl.as_millis() as u64)
                .invoke(con)
        })?;
        if held == 0 {
            return Err(FleetError::Shards(format!(
                "shard {}: its membership lapsed (no heartbeat for {} s) and may be another \
                 process's now",
                self.me,
                self.ttl.as_secs()
            )));
        }
        Ok(())
    }

    /// Leaves the fleet: the index is free at once.
    pub(crate) fn leave(&mut self) {
        let key = self.key(&format!("member:{}", self.me));
        let script = &self.scripts[2];
        let _ = self
            .link
            .run(|con| script.key(&key).arg(&self.token).invoke::<i64>(con));
    }
}

/// One shard as `status --frontier` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct ShardStatus {
    /// Its index.
    pub(crate) shard: u32,
    /// Whether a live process holds it.
    pub(crate) member: bool,
    /// Whether it said it has nothing to do.
    pub(crate) idle: bool,
    /// Inbox elements not yet taken in (trimmed).
    pub(crate) inbox: u64,
    /// Inbox elements taken in, ever.
    pub(crate) trimmed: u64,
}

/// The shards of crawl `crawl`, none when it is not split by owner.
pub(crate) fn status(link: &mut RedisLink, crawl: &str) -> Result<Vec<ShardStatus>, FleetError> {
    let prefix = tag(crawl, "shards");
    let n: Option<String> =
        link.run(|con| redis::cmd("GET").arg(format!("{prefix}:n")).query(con))?;
    // A stored number out of range is shown as no shards, not trusted as a loop bound.
    let n = n
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| *n <= MAX_SHARDS)
        .unwrap_or(0);
    let mut out = Vec::new();
    for i in 0..n {
        let member: bool = link.run(|con| {
            redis::cmd("EXISTS")
                .arg(format!("{prefix}:member:{i}"))
                .query(con)
        })?;
        let idle: bool = link.run(|con| {
            redis::cmd("HEXISTS")
                .arg(format!("{prefix}:idle"))
                .arg(i)
                .query(con)
        })?;
        let inbox: u64 = link.run(|con| {
            redis::cmd("LLEN")
                .arg(format!("{prefix}:inbox:{i}"))
                .query(con)
        })?;
        let trimmed: Option<u64> = link.run(|con| {
            redis::cmd("HGET")
                .arg(format!("{prefix}:trimmed"))
                .arg(i)
                .query(con)
        })?;
        out.push(ShardStatus {
            shard: i,
            member,
            idle,
            inbox,
            trimmed: trimmed.unwrap_or(0),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_s_origins_share_a_shard_and_hosts_spread() {
        let n = 4;
        assert_eq!(owner("http://a.test", n), owner("https://A.test:8443", n));
        assert_eq!(owner("http://[::1]:80", n), owner("https://[::1]", n));
        let mut per = [0u32; 4];
        for i in 0..4000 {
            per[owner(&format!("http://h{i}.test"), n) as usize] += 1;
        }
        assert!(per.iter().all(|&c| (800..1200).contains(&c)), "{per:?}");
    }

    #[test]
    fn lines_are_read_back_and_what_is_not_understood_is_refused() {
        let mut text = String::new();
        let url = Entry::Url {
            url: "http://a.test/p?q=1".into(),
            depth: 3,
            hops: 1,
        };
        let cash = Entry::Cash {
            fp: Fp(0xdead_beef_0000_0001),
            cash: 0.125,
        };
        url.write(&mut text);
        cash.write(&mut text);
        let back: Vec<Entry> = text.lines().filter_map(Entry::parse).collect();
        assert_eq!(back, vec![url, cash]);
        for bad in [
            "u 1 2 ftp://a.test/x",
            "u -1 0 http://a.test/",
            "u 1 0 http://a.test/a b",
            "u 99999999999 0 http://a.test/",
            "c deadbeef 1.0",
            "c 00000000deadbeef NaN",
            "c 00000000deadbeef -1",
            "c 00000000deadbeef inf",
            "c 00000000deadbeef 1 extra",
            "x anything",
            "",
        ] {
            assert_eq!(Entry::parse(bad), None, "{bad:?}");
        }
    }
}
