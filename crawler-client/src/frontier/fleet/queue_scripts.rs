//! The Lua scripts of the shared queue (`queue`): each changes the keys of hosts of one group
//! (one slot of a cluster) at once, so that no crash or other process sees half a change.
//! A host's keys come in one order, [queue, rows, shape, taken, holders], five KEYS per
//! host, and the functions below work on the host [`rows_in_buckets`]'s `begin_host` chose
//! last: a saved batch's offers, cash and settled rows of every host of a group are one call
//! ([`PUT`]), which is what a fleet's Redis spends most on. The functions are defined once
//! per call, not once per host, and keep the host's state in variables `begin_host` sets.

/// A host's keys by name, and its rows' buckets: `begin_host(k)` makes the host whose five
/// keys start at `KEYS[k]` the one the functions work on; its shape (the buckets' level,
/// split and row count, and the last row number given, `seq`) is read by `need_shape()` the
/// first time a function needs it, so a part that only pays cash to queued URLs never reads
/// it. `bucket(fp)` names the bucket of a fingerprint (8 bytes; remembered for the host's
/// turn, as a script asks it twice of a row it reads and writes, until `grow()` changes the
/// shape), `grow()` splits buckets while the rows outnumber them, and `save_shape()` writes
/// the shape back.
macro_rules! rows_in_buckets {
    () => {
        concat!(
            "local QUEUE, ROWS, SHAPE, TAKEN, HOLDERS
local shaped, level, split, count, seq, span, names, of
local function low24(fp)
  local x, y, z = string.byte(fp, 6, 8)
  return x * 65536 + y * 256 + z
end
local function begin_host(k)
  QUEUE, ROWS, SHAPE, TAKEN, HOLDERS = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4]
  shaped, names, of = false, {}, {}
end
local function need_shape()
  if shaped then return end
  local shape = redis.call('HMGET', SHAPE, 'level', 'split', 'count', 'seq')
  level, split, count = tonumber(shape[1] or '0'), tonumber(shape[2] or '0'), tonumber(shape[3] or '0')
  seq, span, shaped = tonumber(shape[4] or '0'), 2 ^ level, true
end
local function bucket(fp)
  local name = of[fp]
  if name then return name end
  need_shape()
  local h = low24(fp)
  local b = h % span
  if b < split then b = h % (span * 2) end
  name = names[b]
  if not name then
    name = ROWS .. ':' .. string.format('%d', b)
    names[b] = name
  end
  of[fp] = name
  return name
end
local function grow(per_bucket)
  while level < 24 and count > per_bucket * (2 ^ level + split) do
    local from = ROWS .. ':' .. string.format('%d', split)
    local to = ROWS .. ':' .. string.format('%d', split + 2 ^ level)
    local all = redis.call('HGETALL', from)
    local moved, gone, wider = {}, {}, 2 ^ (level + 1)
    for i = 1, #all, 2 do
      if low24(all[i]) % wider ~= split then
        moved[#moved + 1] = all[i]
        moved[#moved + 1] = all[i + 1]
        gone[#gone + 1] = all[i]
      end
    end
    if #gone > 0 then
      redis.call('HSET', to, unpack(moved))
      redis.call('HDEL', from, unpack(gone))
    end
    split = split + 1
    if split == span then
      level, split, span = level + 1, 0, span * 2
    end
    of = {}
  end
end
local function save_shape()
  redis.call('HSET', SHAPE, 'level', level, 'split', split, 'count', count, 'seq', seq)
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

/// What a host script does, as functions of the keys named by [`host_keys`] and of ARGV
/// from a position. A call from a script costs several times what one more field in it does,
/// so a script reads each bucket it needs once (`known_of`) and writes each once (`write`,
/// then `flush`): offers and settlements of one batch touch the same buckets.
/// `known_of(fps, known)` sets `known[fp]` for each of `fps` that has a row. `write(fp, value)`
/// sets a row when flushed, the last write of a field winning; `flush()` sends them.
/// `offer(at, n, hold, expiry, known)` queues the `n` URLs at `at` (fp, cash, depth, hops,
/// revisit, url each) not seen yet, and every revisit, and pays a URL seen and still queued
/// the cash offered with it (another process found it too: OPIC gives it both shares),
/// answering as URL-at-a-time `HSETNX` and `ZADD INCR` would in the order given; returns how
/// many were queued and, when `hold` names a taking, the URLs new to the crawl as taken by it
/// (its lease ending at `expiry`, server ms) rather than queued: 24 bytes each, fingerprint,
/// cash and row number (big-endian doubles), for the process that holds the host and would
/// take them next. `deposit(at, n)` pays the `n` pairs (fp, cash) at `at` (by a `ZADD XX INCR` per URL for one
/// or two URLs, by one read and one write for more) to those still
/// queued. `settle(token, how, fps)` settles the rows of `fps` still held by `token`: done,
/// retry (back with one more attempt) or return (back as it was); returns how many. Each is
/// found by a plain search of the taking's string (a match counts only on a row's boundary),
/// so a settlement costs Lua work per row settled, not per row held (a held host's taking
/// keeps hundreds). A URL that is not a revisit is queued by one `HSETNX` of its row, which
/// says whether it was seen: `known` (from `known_of`) is needed for revisits only, and a
/// bucket read and written once per batch cost a call each for the one or two offered URLs
/// a bucket gets in a batch (10% of the script's time per URL).
macro_rules! host_functions {
    () => {
        r"local writes, written = {}, {}
local function write(fp, value)
  local b = bucket(fp)
  local w = writes[b]
  if not w then
    w = {}
    writes[b] = w
  end
  w[#w + 1] = fp
  w[#w + 1] = value
  written[fp] = value
end
local function flush()
  for b, w in pairs(writes) do many('HSET', b, w) end
  writes = {}
end
local function known_of(fps, known)
  local order, where = group(fps)
  for _, b in ipairs(order) do
    local names = {}
    for k, i in ipairs(where[b]) do names[k] = fps[i] end
    local got = fetch('HMGET', b, names)
    for k, i in ipairs(where[b]) do
      if got[k] then known[fps[i]] = true end
    end
  end
end
local function offer(at, n, hold, expiry, known)
  need_shape()
  local fresh, numbered = {}, {}
  local score, scored, owed, owing = {}, {}, {}, {}
  local queued = 0
  for k = 1, n do
    local i = at + (k - 1) * 6
    local fp, cash, revisit = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 4]
    local queue = revisit == '1'
    if queue or not known[fp] then
      local row = string.format('%x', seq + 1) .. '\t' .. ARGV[i + 2] .. '\t' .. ARGV[i + 3] ..
        '\t0\t' .. revisit .. '\t' .. ARGV[i + 5]
      if queue then
        write(fp, row)
      else
        queue = redis.call('HSETNX', bucket(fp), fp, row) == 1
      end
      if queue and not known[fp] then
        count = count + 1
        fresh[fp] = true
      end
      known[fp] = true
    end
    if queue then
      seq = seq + 1
      numbered[fp] = seq
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
  local zadd, kept, told = {}, {}, {}
  for _, fp in ipairs(scored) do
    if hold and fresh[fp] then
      local c = struct.pack('>d', -score[fp])
      kept[#kept + 1] = fp .. c
      told[#told + 1] = fp .. c .. struct.pack('>d', numbered[fp])
    else
      zadd[#zadd + 1] = score[fp]
      zadd[#zadd + 1] = fp
    end
  end
  if #kept > 0 then
    local before = redis.call('HGET', HOLDERS, hold) or ''
    redis.call('HSET', HOLDERS, hold, before .. table.concat(kept))
    redis.call('ZADD', TAKEN, expiry, hold)
  end
  local pay = {}
  for _, fp in ipairs(owing) do
    if owed[fp] then pay[#pay + 1] = fp end
  end
  local now = fetch('ZMSCORE', QUEUE, pay)
  for k, fp in ipairs(pay) do
    if now[k] then
      zadd[#zadd + 1] = tonumber(now[k]) - owed[fp]
      zadd[#zadd + 1] = fp
    end
  end
  many('ZADD', QUEUE, zadd)
  return queued, table.concat(told)
end
local function deposit(at, n)
  local owed, fps = {}, {}
  for k = 1, n do
    local i = at + (k - 1) * 2
    local fp = ARGV[i]
    if not owed[fp] then fps[#fps + 1] = fp end
    owed[fp] = (owed[fp] or 0) + tonumber(ARGV[i + 1])
  end
  -- Most parts owe one or two URLs (a page's link to another host): a command each, which
  -- pays only a URL still queued (XX), where a read and a write cost two for any number.
  if #fps <= 2 then
    for _, fp in ipairs(fps) do redis.call('ZADD', QUEUE, 'XX', 'INCR', -owed[fp], fp) end
    return
  end
  local now = fetch('ZMSCORE', QUEUE, fps)
  local zadd = {}
  for k, fp in ipairs(fps) do
    if now[k] then
      zadd[#zadd + 1] = tonumber(now[k]) - owed[fp]
      zadd[#zadd + 1] = fp
    end
  end
  many('ZADD', QUEUE, zadd)
end
local function settle(token, how, fps)
  local held = redis.call('HGET', HOLDERS, token)
  if not held then return 0 end
  local at, mine, back, looked = {}, {}, {}, {}
  for _, fp in ipairs(fps) do
    if not looked[fp] then
      looked[fp] = true
      local from = 1
      while true do
        local i = string.find(held, fp, from, true)
        if not i then break end
        if i % 16 == 1 then
          at[#at + 1] = i
          mine[#mine + 1] = fp
          back[#back + 1] = -struct.unpack('>d', held, i + 8)
          back[#back + 1] = fp
          break
        end
        from = i + 1
      end
    end
  end
  if #mine == 0 then return 0 end
  if #mine * 16 == #held then
    redis.call('HDEL', HOLDERS, token)
    redis.call('ZREM', TAKEN, token)
  else
    table.sort(at)
    local keep, from = {}, 1
    for _, i in ipairs(at) do
      keep[#keep + 1] = string.sub(held, from, i - 1)
      from = i + 16
    end
    keep[#keep + 1] = string.sub(held, from)
    redis.call('HSET', HOLDERS, token, table.concat(keep))
  end
  if how == 'done' then
    for _, fp in ipairs(mine) do write(fp, '') end
  else
    if how == 'retry' then
      for _, fp in ipairs(mine) do
        local row = written[fp] or redis.call('HGET', bucket(fp), fp) or ''
        local a, b, c, tries, rest = string.match(row, '^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$')
        if a then
          write(fp, a .. '\t' .. b .. '\t' .. c .. '\t' .. (tonumber(tries) + 1) .. '\t' .. rest)
        end
      end
    end
    many('ZADD', QUEUE, back)
  end
  return #mine
end
"
    };
}

/// What a saved batch does to the queues of a group's hosts: KEYS = five per host (see the
/// module), then the caller's answer key; ARGV = [the call's id, rows per bucket, then per
/// host, in the order of its keys: the length of its part, the taking that holds what is new
/// ('' for none: queued), its lease in ms, n, the n URLs offered (6 each, see `offer`), m,
/// the m pairs of cash owed (see `deposit`), then any number of settlements: token, how, k,
/// the k fingerprints]. Returns per host {queued, settled, the URLs held (see `offer`)}.
///
/// A call is not idempotent (cash is added, counts are of what was new), yet a connection
/// that breaks after the server ran it and before its answer came back sends it again: so the
/// answer is kept under the answer key with the call's id, and a call whose id is found there
/// returns it without running again. One key per process and group, overwritten by the next
/// call, and gone a day after the last.
pub(super) const PUT: &str = concat!(
    rows_in_buckets!(),
    bulk!(),
    grouped!(),
    host_functions!(),
    r"local MEMO, CALL = KEYS[#KEYS], ARGV[1]
local kept = redis.call('GET', MEMO)
if kept then
  local was = cmsgpack.unpack(kept)
  if was[1] == CALL then return was[2] end
end
local per_bucket = tonumber(ARGV[2])
local clock
-- One host's part: its keys from KEYS[k], its arguments after ARGV[b + 1] (its length) up
-- to ARGV[last].
local function put_host(k, b, last)
  begin_host(k)
  writes, written = {}, {}
  local n = tonumber(ARGV[b + 4])
  local m = tonumber(ARGV[b + 5 + 6 * n])
  -- Which revisits are of URLs seen: each bucket read once. Any other URL is queued by
  -- HSETNX, which says whether it was seen.
  local asked = {}
  for j = 1, n do
    local i = b + 5 + (j - 1) * 6
    if ARGV[i + 4] == '1' then asked[#asked + 1] = ARGV[i] end
  end
  local known = {}
  known_of(asked, known)
  local queued, held = 0, ''
  if n > 0 then
    local hold, expiry = nil, 0
    if ARGV[b + 2] ~= '' then
      if not clock then
        local t = redis.call('TIME')
        clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      end
      hold = ARGV[b + 2]
      expiry = clock + tonumber(ARGV[b + 3])
    end
    queued, held = offer(b + 5, n, hold, expiry, known)
  end
  if m > 0 then deposit(b + 6 + 6 * n, m) end
  local at = b + 6 + 6 * n + 2 * m
  local settled = 0
  while at <= last do
    local c = tonumber(ARGV[at + 2])
    local fps = {}
    for i = 1, c do fps[i] = ARGV[at + 2 + i] end
    settled = settled + settle(ARGV[at], ARGV[at + 1], fps)
    at = at + 3 + c
  end
  flush()
  if queued > 0 then
    grow(per_bucket)
    save_shape()
  end
  return {queued, settled, held}
end
local out, s, k = {}, 3, 1
while s <= #ARGV do
  local len = tonumber(ARGV[s])
  out[#out + 1] = put_host(k, s - 1, s + len)
  s = s + 1 + len
  k = k + 5
end
redis.call('SET', MEMO, cmsgpack.pack({CALL, out}), 'PX', 86400000)
return out
"
);

/// Takes URLs: ARGV = [n, lease ms, token]. URLs whose lease expired go back to the queue
/// first, with their cash. The URLs of one taking are held together: `holders` maps its token
/// to their fingerprints and cash (16 bytes each: the 8 of the fingerprint, then the cash as a
/// big-endian double), and `taken` scores the token by its lease's expiry. A taker whose lease
/// expired cannot settle a URL another took since, and a taking costs two writes, not two
/// per URL. Returns fp, cash, row for each, best first. A token already holding URLs is a
/// taking sent again after its answer was lost (the connection broke): it answers with what
/// it holds, rather than taking more under the same token.
pub(super) const TAKE: &str = concat!(
    server_now!(),
    rows_in_buckets!(),
    bulk!(),
    grouped!(),
    r"begin_host(1)
local expired = redis.call('ZRANGEBYSCORE', TAKEN, '-inf', now)
if #expired > 0 then
  local held = fetch('HMGET', HOLDERS, expired)
  local back = {}
  for k = 1, #expired do
    local h = held[k] or ''
    for i = 1, #h, 16 do
      back[#back + 1] = -struct.unpack('>d', h, i + 8)
      back[#back + 1] = string.sub(h, i, i + 7)
    end
  end
  many('ZREM', TAKEN, expired)
  many('HDEL', HOLDERS, expired)
  many('ZADD', QUEUE, back)
end
local fps, cash, held = {}, {}, {}
local again = redis.call('HGET', HOLDERS, ARGV[3])
if again then
  for i = 1, #again, 16 do
    fps[#fps + 1] = string.sub(again, i, i + 7)
    cash[#cash + 1] = struct.unpack('>d', again, i + 8)
  end
else
  local best = redis.call('ZRANGE', QUEUE, 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
  if #best == 0 then return {} end
  for i = 1, #best, 2 do
    local fp, c = best[i], -tonumber(best[i + 1])
    fps[#fps + 1] = fp
    cash[#cash + 1] = c
    held[#held + 1] = fp .. struct.pack('>d', c)
  end
  many('ZREM', QUEUE, fps)
  redis.call('HSET', HOLDERS, ARGV[3], table.concat(held))
end
redis.call('ZADD', TAKEN, now + tonumber(ARGV[2]), ARGV[3])
local rows = {}
local order, where = group(fps)
for _, b in ipairs(order) do
  local names = {}
  for k, i in ipairs(where[b]) do names[k] = fps[i] end
  local got = fetch('HMGET', b, names)
  for k, i in ipairs(where[b]) do rows[i] = got[k] or '' end
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

/// Puts every taken URL back in the queue with its cash, whoever took it: KEYS = [queue,
/// taken, holders]. Run by a process that has just become the host's only taker. Returns how
/// many came back.
pub(super) const RECLAIM: &str = concat!(
    bulk!(),
    r"local held = redis.call('HVALS', KEYS[3])
local back = {}
for _, h in ipairs(held) do
  for i = 1, #h, 16 do
    back[#back + 1] = -struct.unpack('>d', h, i + 8)
    back[#back + 1] = string.sub(h, i, i + 7)
  end
end
many('ZADD', KEYS[1], back)
redis.call('DEL', KEYS[2], KEYS[3])
return #back / 2
"
);

/// Gives a host its id: KEYS = [hosts, host_ids, origins]; ARGV = [origin].
pub(super) const HOST_ID: &str = r"
local id = redis.call('HGET', KEYS[1], ARGV[1])
if id then return tonumber(id) end
id = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1], id)
redis.call('HSET', KEYS[3], id, ARGV[1])
return id
";

/// The layout of a crawl's keys: KEYS = [layout, host_ids]; ARGV = [this build's layout].
/// A crawl with host ids and no layout was begun by a build before layouts were named ("1");
/// a crawl not begun is marked with this build's. One script, so that a process starting
/// beside another cannot see the other's first host id before its mark.
pub(super) const LAYOUT_OF: &str = r"
local found = redis.call('GET', KEYS[1])
if found then return found end
if redis.call('EXISTS', KEYS[2]) == 1 then return '1' end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
";
