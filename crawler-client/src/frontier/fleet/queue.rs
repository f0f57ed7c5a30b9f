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
//! - `{C:ID}:seq` (counter): the host's rows are numbered in arrival order.
//! - `{C:ID}:rows:B` (hashes fingerprint -> `seq \t depth \t hops \t attempts \t revisit \t
//!   url`, or empty once done): the host's seen-set and what the crawl loop needs of a URL
//!   queued or taken. One store for both, so that "seen? then queue" is one `HSETNX` in one
//!   slot (no crash can lose a URL or queue it twice), and a queued URL is held once, not in a
//!   set besides. The URL is kept without its origin when it starts with it (the host's origin
//!   is known).
//! - `{C:ID}:shape` (hash `level`, `split`, `count`): how the rows are spread over buckets
//!   `B`, by linear hashing on the low 24 bits of the fingerprint: `2^level + split` buckets of
//!   about [`ROWS_PER_BUCKET`] rows, split one at a time as the host grows, so that each stays
//!   small enough for Redis to keep it as a listpack (`hash-max-listpack-entries`, 128 by
//!   default, and `hash-max-listpack-value`, 64 bytes): a row then costs its bytes and about
//!   four more, where a hash table entry costs 60 beyond them. A bucket holding a longer row
//!   becomes a hash table, which costs what one hash of every row would.
//! - `{C:ID}:queue` (sorted set of fingerprints scored by minus their OPIC cash): the URLs
//!   waiting, best first. The fingerprint is the member so that any process can pay a queued
//!   URL cash (`ZADD XX INCR`) without knowing more of it.
//! - `{C:ID}:taken` (sorted set of fingerprints scored by their lease's expiry, server ms) and
//!   `{C:ID}:holders` (hash fingerprint -> `token \t cash`): the URLs handed out, by whom, with
//!   the cash they go back with.
//!
//! A fingerprint is its 8 bytes, big-endian, wherever it is a member or a field: as decimal
//! text it took 20 bytes, and with three copies of each queued URL's, the difference is a
//! quarter of the memory a URL costs (docs/ARCHITECTURE.md has the sums).

use super::redis_link::RedisLink;
use super::{FleetError, connect, tag};
use crate::ids::{Fp, HostId};
use crate::state::{NewUrl, Queued};
use redis::Script;
use std::time::Duration;

/// The version of the layout above, kept in `{C:crawl}:layout`.
pub(crate) const LAYOUT: &str = "2";

/// Rows per bucket at which the next bucket is split: buckets not yet split in a round hold
/// up to twice as many, which stays under Redis's 128 listpack entries with room for chance.
pub(crate) const ROWS_PER_BUCKET: u32 = 40;

/// The rows' buckets, for a script whose `KEYS[R]` is the rows' prefix and `KEYS[S]` the
/// shape: `bucket(fp)` names the bucket of a fingerprint (8 bytes), `grow()` splits buckets
/// while the rows outnumber them, and `save_shape()` writes the shape back.
macro_rules! rows_in_buckets {
    ($r:literal, $s:literal) => {
        concat!(
            "local ROWS, SHAPE = KEYS[",
            $r,
            "], KEYS[",
            $s,
            "]
local shape = redis.call('HMGET', SHAPE, 'level', 'split', 'count')
local level, split, count = tonumber(shape[1] or '0'), tonumber(shape[2] or '0'), tonumber(shape[3] or '0')
local function low24(fp)
  return string.byte(fp, 6) * 65536 + string.byte(fp, 7) * 256 + string.byte(fp, 8)
end
local function bucket(fp)
  local h = low24(fp)
  local b = h % (2 ^ level)
  if b < split then b = h % (2 ^ (level + 1)) end
  return ROWS .. ':' .. string.format('%d', b)
end
local function grow(per_bucket)
  while level < 24 and count > per_bucket * (2 ^ level + split) do
    local from = ROWS .. ':' .. string.format('%d', split)
    local to = ROWS .. ':' .. string.format('%d', split + 2 ^ level)
    local all = redis.call('HGETALL', from)
    local moved, gone = {}, {}
    for i = 1, #all, 2 do
      if low24(all[i]) % (2 ^ (level + 1)) ~= split then
        table.insert(moved, all[i])
        table.insert(moved, all[i + 1])
        table.insert(gone, all[i])
      end
    end
    if #gone > 0 then
      redis.call('HSET', to, unpack(moved))
      redis.call('HDEL', from, unpack(gone))
    end
    split = split + 1
    if split == 2 ^ level then
      level, split = level + 1, 0
    end
  end
end
local function save_shape()
  redis.call('HSET', SHAPE, 'level', level, 'split', split, 'count', count)
end
"
        )
    };
}

/// Bulk calls, for scripts that touch many fields: a call from a script costs several times
/// what one more field in it does, so each command is sent once per thousand arguments rather
/// than once per row (and Lua's `unpack` stays within its stack). `many(cmd, key, args)`
/// sends `cmd key args...` in chunks (pairs stay whole: the chunk is even); `fetch(cmd, key,
/// fields)` does the same for HMGET or ZMSCORE and returns one answer per field, false for
/// none.
macro_rules! bulk {
    () => {
        "local function many(cmd, key, args)
  for i = 1, #args, 1000 do
    redis.call(cmd, key, unpack(args, i, math.min(i + 999, #args)))
  end
end
local function fetch(cmd, key, fields)
  local out = {}
  for i = 1, #fields, 1000 do
    local got = redis.call(cmd, key, unpack(fields, i, math.min(i + 999, #fields)))
    for k = 1, #got do out[#out + 1] = got[k] end
  end
  return out
end
"
    };
}

/// Lists fingerprints by bucket (after [`rows_in_buckets`]): `group(fps)` returns the
/// buckets in first-seen order and, per bucket, the positions in `fps` that fall in it.
macro_rules! grouped {
    () => {
        "local function group(fps)
  local order, at = {}, {}
  for i = 1, #fps do
    local b = bucket(fps[i])
    if not at[b] then
      at[b] = {}
      order[#order + 1] = b
    end
    local list = at[b]
    list[#list + 1] = i
  end
  return order, at
end
"
    };
}

/// Queues the URLs not seen yet: KEYS = [queue, seq, rows, shape]; ARGV = [rows per bucket,
/// then per URL: fp, cash, depth, hops, revisit, url]. A revisit is queued even when seen. A
/// URL seen before that is still queued gets the cash offered with it: another process found
/// it too, and OPIC gives it both shares. Returns how many were queued. The answer is the
/// one URL-at-a-time `HSETNX` and `ZADD INCR` would give, in the order given, with each
/// command sent once per bucket or once in all.
const OFFER: &str = concat!(
    rows_in_buckets!("3", "4"),
    bulk!(),
    grouped!(),
    r"local seq = tonumber(redis.call('GET', KEYS[2]) or '0')
local fps = {}
for i = 2, #ARGV, 6 do fps[#fps + 1] = ARGV[i] end
local known = {}
local order, at = group(fps)
for _, b in ipairs(order) do
  local names = {}
  for k, i in ipairs(at[b]) do names[k] = fps[i] end
  local got = fetch('HMGET', b, names)
  for k, i in ipairs(at[b]) do
    if got[k] then known[fps[i]] = true end
  end
end
local rows, score, scored, owed, owing = {}, {}, {}, {}, {}
local queued = 0
for n = 1, #fps do
  local i = 2 + (n - 1) * 6
  local fp, cash, revisit = fps[n], tonumber(ARGV[i + 1]), ARGV[i + 4]
  if not known[fp] or revisit == '1' then
    if not known[fp] then
      count = count + 1
      known[fp] = true
    end
    seq = seq + 1
    local b = bucket(fp)
    rows[b] = rows[b] or {}
    local r = rows[b]
    r[#r + 1] = fp
    r[#r + 1] = string.format('%x', seq) .. '\t' .. ARGV[i + 2] .. '\t' .. ARGV[i + 3] ..
      '\t0\t' .. revisit .. '\t' .. ARGV[i + 5]
    if not score[fp] then scored[#scored + 1] = fp end
    score[fp] = -cash
    owed[fp] = nil
    queued = queued + 1
  elseif cash > 0 then
    if score[fp] then
      score[fp] = score[fp] - cash
    else
      if not owed[fp] then owing[#owing + 1] = fp end
      owed[fp] = (owed[fp] or 0) + cash
    end
  end
end
for b, r in pairs(rows) do many('HSET', b, r) end
local pairs_ = {}
for _, fp in ipairs(scored) do
  pairs_[#pairs_ + 1] = score[fp]
  pairs_[#pairs_ + 1] = fp
end
local pay = {}
for _, fp in ipairs(owing) do
  if owed[fp] then pay[#pay + 1] = fp end
end
local now = fetch('ZMSCORE', KEYS[1], pay)
for k, fp in ipairs(pay) do
  if now[k] then
    pairs_[#pairs_ + 1] = tonumber(now[k]) - owed[fp]
    pairs_[#pairs_ + 1] = fp
  end
end
many('ZADD', KEYS[1], pairs_)
redis.call('SET', KEYS[2], seq)
grow(tonumber(ARGV[1]))
save_shape()
return queued
"
);

/// Gives queued URLs more cash (OPIC: a page read by one process pays URLs another queued):
/// KEYS = [queue]; ARGV = pairs of fp, cash. URLs no longer queued are left alone.
const DEPOSIT: &str = concat!(
    bulk!(),
    r"local owed, fps = {}, {}
for i = 1, #ARGV, 2 do
  local fp = ARGV[i]
  if not owed[fp] then fps[#fps + 1] = fp end
  owed[fp] = (owed[fp] or 0) + tonumber(ARGV[i + 1])
end
local now = fetch('ZMSCORE', KEYS[1], fps)
local out = {}
for k, fp in ipairs(fps) do
  if now[k] then
    out[#out + 1] = tonumber(now[k]) - owed[fp]
    out[#out + 1] = fp
  end
end
many('ZADD', KEYS[1], out)
return #out / 2
"
);

/// Takes URLs: KEYS = [queue, taken, rows, holders, shape]; ARGV = [n, lease ms, token]. URLs whose
/// lease expired go back to the queue first, with their cash. A URL taken is in `taken` by its
/// lease's expiry and in `holders` as `token \t cash`, so that a taker whose lease expired
/// cannot settle a URL another took since. Returns fp, cash, row for each, best first.
const TAKE: &str = concat!(
    server_now!(),
    rows_in_buckets!("3", "5"),
    bulk!(),
    grouped!(),
    r"local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
if #expired > 0 then
  local held = fetch('HMGET', KEYS[4], expired)
  local back = {}
  for k, fp in ipairs(expired) do
    back[#back + 1] = -tonumber(string.match(held[k] or '\t0', '\t(.*)$'))
    back[#back + 1] = fp
  end
  many('ZREM', KEYS[2], expired)
  many('HDEL', KEYS[4], expired)
  many('ZADD', KEYS[1], back)
end
local best = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
if #best == 0 then return {} end
local fps, cash, lease, holders = {}, {}, {}, {}
local due = now + tonumber(ARGV[2])
for i = 1, #best, 2 do
  local fp, c = best[i], -tonumber(best[i + 1])
  fps[#fps + 1] = fp
  cash[#cash + 1] = c
  lease[#lease + 1] = due
  lease[#lease + 1] = fp
  holders[#holders + 1] = fp
  holders[#holders + 1] = ARGV[3] .. '\t' .. c
end
many('ZREM', KEYS[1], fps)
many('ZADD', KEYS[2], lease)
many('HSET', KEYS[4], holders)
local rows = {}
local order, at = group(fps)
for _, b in ipairs(order) do
  local names = {}
  for k, i in ipairs(at[b]) do names[k] = fps[i] end
  local got = fetch('HMGET', b, names)
  for k, i in ipairs(at[b]) do rows[i] = got[k] or '' end
end
local out = {}
for i = 1, #fps do
  out[#out + 1] = fps[i]
  out[#out + 1] = tostring(cash[i])
  out[#out + 1] = rows[i]
end
return out
"
);

/// Settles taken URLs: KEYS = [queue, taken, rows, holders, shape]; ARGV = [token, how,
/// fp...] with `how` one of done, retry (back with one more attempt), return (back as it
/// was). A URL whose holder is no longer `token` is left alone. Returns how many were settled.
const SETTLE: &str = concat!(
    rows_in_buckets!("3", "5"),
    bulk!(),
    grouped!(),
    r"local asked, once = {}, {}
for i = 3, #ARGV do
  if not once[ARGV[i]] then
    once[ARGV[i]] = true
    asked[#asked + 1] = ARGV[i]
  end
end
local held = fetch('HMGET', KEYS[4], asked)
local mine, back = {}, {}
local prefix = ARGV[1] .. '\t'
for k, fp in ipairs(asked) do
  local h = held[k]
  if h and string.sub(h, 1, #prefix) == prefix then
    mine[#mine + 1] = fp
    back[#back + 1] = -tonumber(string.match(h, '\t(.*)$'))
    back[#back + 1] = fp
  end
end
if #mine == 0 then return 0 end
many('ZREM', KEYS[2], mine)
many('HDEL', KEYS[4], mine)
if ARGV[2] == 'done' then
  local order, at = group(mine)
  for _, b in ipairs(order) do
    local cleared = {}
    for _, i in ipairs(at[b]) do
      cleared[#cleared + 1] = mine[i]
      cleared[#cleared + 1] = ''
    end
    many('HSET', b, cleared)
  end
else
  if ARGV[2] == 'retry' then
    for _, fp in ipairs(mine) do
      local row = redis.call('HGET', bucket(fp), fp) or ''
      local a, b, c, tries, rest = string.match(row, '^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$')
      if a then
        redis.call('HSET', bucket(fp), fp, a .. '\t' .. b .. '\t' .. c .. '\t' .. (tonumber(tries) + 1) .. '\t' .. rest)
      end
    end
  end
  many('ZADD', KEYS[1], back)
end
return #mine
"
);

/// Puts every taken URL back in the queue with its cash, whoever took it: KEYS = [queue,
/// taken, holders]. Run by a process that has just become the host's only taker. Returns how
/// many came back.
const RECLAIM: &str = concat!(
    bulk!(),
    r"local held = redis.call('HGETALL', KEYS[3])
local back = {}
for i = 1, #held, 2 do
  back[#back + 1] = -tonumber(string.match(held[i + 1], '\t(.*)$'))
  back[#back + 1] = held[i]
end
many('ZADD', KEYS[1], back)
redis.call('DEL', KEYS[2], KEYS[3])
return #held / 2
"
);

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

/// A URL handed out, with the token of its taking to settle it by.
#[derive(Debug, Clone, PartialEq)]
pub struct Taken {
    /// The URL as the crawl loop sees it.
    pub job: Queued,
    token: String,
}

/// The keys of one host's queue.
struct HostKeys {
    queue: String,
    taken: String,
    rows: String,
    holders: String,
    seq: String,
    shape: String,
}

/// The shared queue of one crawl, over one connection (a process holds one).
pub struct SharedQueue {
    link: RedisLink,
    /// Each host's origin, as rows are kept without it.
    origins: std::collections::HashMap<HostId, String>,
    crawl: String,
    holder: String,
    takes: u64,
    offer: Script,
    take: Script,
    settle: Script,
    reclaim: Script,
    deposit: Script,
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
            holder: holder.to_string(),
            takes: 0,
            offer: Script::new(OFFER),
            take: Script::new(TAKE),
            settle: Script::new(SETTLE),
            reclaim: Script::new(RECLAIM),
            deposit: Script::new(DEPOSIT),
            host_id: Script::new(HOST_ID),
        })
    }

    /// The connection, to wait out a pause with Ctrl-C.
    pub(crate) fn link(&mut self) -> &mut RedisLink {
        &mut self.link
    }

    fn host_keys(&self, host: HostId) -> HostKeys {
        let tag = tag(&self.crawl, &host.to_string());
        HostKeys {
            queue: format!("{tag}:queue"),
            taken: format!("{tag}:taken"),
            rows: format!("{tag}:rows"),
            holders: format!("{tag}:holders"),
            seq: format!("{tag}:seq"),
            shape: format!("{tag}:shape"),
        }
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
        self.put_offer(&mut put, host, urls)?;
        Ok(self.send(put)?.first().map_or(0, |(_, n)| *n))
    }

    /// Gives queued URLs of `host` more cash; those no longer queued are left alone.
    pub fn deposit(&mut self, host: HostId, cash: &[(Fp, f64)]) -> Result<(), FleetError> {
        let mut put = Put::default();
        self.put_deposit(&mut put, host, cash);
        self.send(put)?;
        Ok(())
    }

    /// Adds to `put` the offer of `urls` to `host`'s queue (see [`Self::offer`]): the host
    /// listed, then the URLs queued, in this order in the round trip.
    pub(crate) fn put_offer(
        &mut self,
        put: &mut Put,
        host: HostId,
        urls: &[NewUrl],
    ) -> Result<(), FleetError> {
        if urls.is_empty() {
            return Ok(());
        }
        let best = urls.iter().map(|u| u.priority).fold(f64::MIN, f64::max);
        let mut listed = redis::cmd("ZADD");
        listed
            .arg(self.crawl_key("active"))
            .arg("GT")
            .arg(best)
            .arg(host.0);
        put.listings.push(listed);
        let origin = self.origin(host)?.unwrap_or_default();
        let k = self.host_keys(host);
        let mut cmd = eval(&self.offer);
        cmd.arg(4)
            .arg(&k.queue)
            .arg(&k.seq)
            .arg(&k.rows)
            .arg(&k.shape)
            .arg(ROWS_PER_BUCKET);
        for u in urls {
            cmd.arg(&member(u.fp)[..])
                .arg(u.priority.max(0.0))
                .arg(u.depth)
                .arg(u.hops)
                .arg(if u.revisit { "1" } else { "0" })
                .arg(relative(&u.url, &origin));
        }
        put.offers.push((host, cmd));
        Ok(())
    }

    /// Adds to `put` the cash owed to queued URLs of `host` (see [`Self::deposit`]).
    pub(crate) fn put_deposit(&self, put: &mut Put, host: HostId, cash: &[(Fp, f64)]) {
        if cash.is_empty() {
            return;
        }
        let mut cmd = eval(&self.deposit);
        cmd.arg(1).arg(self.host_keys(host).queue);
        for (fp, c) in cash {
            cmd.arg(&member(*fp)[..]).arg(*c);
        }
        put.rest.push(cmd);
    }

    /// Adds to `put` the rows of `host` taken here and now done with.
    pub(crate) fn put_done(&self, put: &mut Put, host: HostId, taken: &[Taken]) {
        let mut by_token: std::collections::HashMap<&str, Vec<&Taken>> = Default::default();
        for t in taken {
            by_token.entry(&t.token).or_default().push(t);
        }
        for (token, rows) in by_token {
            put.rest.push(self.settle_cmd(host, token, "done", &rows));
        }
    }

    /// Adds a command of the caller's (on its own keys) to `put`.
    pub(crate) fn put_cmd(put: &mut Put, cmd: redis::Cmd) {
        put.rest.push(cmd);
    }

    /// Sends what `put` holds in one round trip where the server allows it; returns how many
    /// URLs were queued per host offered.
    pub(crate) fn send(&mut self, put: Put) -> Result<Vec<(HostId, usize)>, FleetError> {
        let Put {
            mut listings,
            offers,
            rest,
        } = put;
        let hosts: Vec<HostId> = offers.iter().map(|(h, _)| *h).collect();
        let first = listings.len();
        listings.extend(offers.into_iter().map(|(_, c)| c));
        listings.extend(rest);
        let scripts = [&self.offer, &self.deposit, &self.settle];
        let answers = self.link.run_all(&listings, &scripts)?;
        Ok(hosts
            .into_iter()
            .zip(answers.into_iter().skip(first))
            .map(|(h, v)| (h, redis::from_redis_value::<usize>(v).unwrap_or(0)))
            .collect())
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
                .key(&k.queue)
                .key(&k.taken)
                .key(&k.rows)
                .key(&k.holders)
                .key(&k.shape)
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
        let how = match how {
            Settle::Done => "done",
            Settle::Retry => "retry",
            Settle::Return => "return",
        };
        Ok(self.settle_all(host, &taken.token, how, std::slice::from_ref(taken))? == 1)
    }

    /// Settles URLs of `host` as done, in one round trip; returns how many were still taken.
    pub fn settle_done(&mut self, host: HostId, taken: &[Taken]) -> Result<usize, FleetError> {
        let mut put = Put::default();
        self.put_done(&mut put, host, taken);
        let cmds = put.rest;
        let answers = self.link.run_all(&cmds, &[&self.settle])?;
        Ok(answers
            .into_iter()
            .map(|v| redis::from_redis_value::<usize>(v).unwrap_or(0))
            .sum())
    }

    fn settle_all(
        &mut self,
        host: HostId,
        token: &str,
        how: &str,
        taken: &[Taken],
    ) -> Result<usize, FleetError> {
        if taken.is_empty() {
            return Ok(0);
        }
        let rows: Vec<&Taken> = taken.iter().collect();
        let cmd = self.settle_cmd(host, token, how, &rows);
        let answers = self.link.run_all(&[cmd], &[&self.settle])?;
        Ok(answers
            .into_iter()
            .map(|v| redis::from_redis_value::<usize>(v).unwrap_or(0))
            .sum())
    }

    fn settle_cmd(&self, host: HostId, token: &str, how: &str, taken: &[&Taken]) -> redis::Cmd {
        let k = self.host_keys(host);
        let mut cmd = eval(&self.settle);
        cmd.arg(5)
            .arg(&k.queue)
            .arg(&k.taken)
            .arg(&k.rows)
            .arg(&k.holders)
            .arg(&k.shape)
            .arg(token)
            .arg(how);
        for t in taken {
            cmd.arg(&member(t.job.fp)[..]);
        }
        cmd
    }

    /// Puts back every URL of `host` some process took, and returns how many: for the
    /// process that has just become the host's only taker (see `process`).
    pub(crate) fn reclaim(&mut self, host: HostId) -> Result<usize, FleetError> {
        let k = self.host_keys(host);
        let script = &self.reclaim;
        self.link.run(|con| {
            script
                .key(&k.queue)
                .key(&k.taken)
                .key(&k.holders)
                .invoke(con)
        })
    }

    /// URLs of `host` waiting (not taken).
    pub fn queued(&mut self, host: HostId) -> Result<u64, FleetError> {
        let queue = self.host_keys(host).queue;
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

    /// Hosts with work, fleet-wide.
    pub(crate) fn active_len(&mut self) -> Result<u64, FleetError> {
        let key = self.crawl_key("active");
        self.link
            .run(|con| redis::cmd("ZCARD").arg(&key).query(con))
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
        let k = self.host_keys(host);
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
                .arg(&k.queue)
                .arg(&k.taken)
                .arg(&k.holders)
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

/// What a saved batch owes the shared queue, to be sent in one round trip: hosts listed
/// first, then their offers, then the rest (cash, settled rows, the caller's own commands).
#[derive(Default)]
pub(crate) struct Put {
    listings: Vec<redis::Cmd>,
    offers: Vec<(HostId, redis::Cmd)>,
    rest: Vec<redis::Cmd>,
}

/// `EVALSHA` of `script`, to be followed by its key count, keys and arguments.
fn eval(script: &Script) -> redis::Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(script.get_hash());
    cmd
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

/// The layout of a crawl's keys: KEYS = [layout, host_ids]; ARGV = [this build's layout].
/// A crawl with host ids and no layout was begun by a build before layouts were named ("1");
/// a crawl not begun is marked with this build's. One script, so that a process starting
/// beside another cannot see the other's first host id before its mark.
const LAYOUT_OF: &str = r"
local found = redis.call('GET', KEYS[1])
if found then return found end
if redis.call('EXISTS', KEYS[2]) == 1 then return '1' end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
";

/// Checks that the crawl's keys follow this build's layout, and marks a new crawl's.
fn check_layout(link: &mut RedisLink, url: &str, crawl: &str) -> Result<(), FleetError> {
    let c = super::tag(crawl, "crawl");
    let keys = [format!("{c}:layout"), format!("{c}:host_ids")];
    let script = Script::new(LAYOUT_OF);
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
