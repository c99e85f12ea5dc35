"""The Redis backend's Lua scripts (SPEC §9, STYLE §4 rule 16), one per hash slot.

Each script touches only keys of one slot, all declared in KEYS, so it runs unchanged on a
single server, under Sentinel and on Cluster. Numbers that must keep full precision (counter
amounts, scores) travel as strings; TTLs travel as whole milliseconds.

SLOT_COMMIT, per slot and atomically:
  1. the request's marker `commit:<request_id>` exists -> "duplicate", nothing applied;
  2. session slots with a tier write: compare the stored version with the expected one; on a
     mismatch return "conflict" and the fresh document, applying nothing (no marker either);
     on a match write (or delete) the document with its sliding TTL;
  3. check every op's key type, then apply the ops; 4. set the marker with its TTL.

The share window of a slot is one hash (`keys.SHARE_KEY`, fields `<hour>:s|t`): a commit's
WindowIncrOp (op 'w') counts into it and prunes it, ROUTER_READ and WINDOW_READ sum the
window's buckets inside the script, so a read passes the window's first and last hour, not one
key per bucket. LEGACY_FOLD moves the per-hour keys of the layout before it
(`share:<hour>:s|t`) into the hash, once per process and slot before its first read
(`RedisStore`): a sidecar upgraded onto a Redis that holds them keeps the window's counts.
"""

from __future__ import annotations

import hashlib
from dataclasses import field

from orca_cli.immutable import immutable

__all__ = ["ALL_SCRIPTS", "LEGACY_FOLD", "ROUTER_READ", "SLOT_COMMIT", "TRACE_WRITE",
           "TRANSITION_RESERVE", "WINDOW_READ", "Script"]


@immutable
class Script:
    name: str
    source: str
    # The SHA1 EVALSHA names it by, computed once (every request sends four to six of them).
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sha", hashlib.sha1(self.source.encode()).hexdigest())


_SLOT_COMMIT = r"""
-- KEYS[1] marker, KEYS[2] tier document, KEYS[3..] the keys ops refer to by index
-- ARGV[1] marker TTL ms
-- ARGV[2] document mode: '-' none, 'r' read, 't' read + slide TTL, 'w' CAS write, 'd' CAS delete
-- ARGV[3] expected version, ARGV[4] new document, ARGV[5] tier TTL ms ('0' = none)
-- ARGV[6] ops: [[code, key index, ...], ...]
local function version(doc)
  if not doc then return 0 end
  local v = string.match(doc, '^{"v":(%d+)')
  if v then return tonumber(v) end
  local ok, t = pcall(cjson.decode, doc)
  if ok and type(t) == 'table' and type(t['v']) == 'number' then return t['v'] end
  return 0
end
local mode = ARGV[2]
if redis.call('EXISTS', KEYS[1]) == 1 then
  if mode == '-' then return {'duplicate', false} end
  return {'duplicate', redis.call('GET', KEYS[2])}
end
local ops = cjson.decode(ARGV[6])
local want = {i = 'string', h = 'hash', p = 'list', z = 'zset', w = 'hash'}
if mode ~= '-' then
  local t = redis.call('TYPE', KEYS[2])['ok']
  if t ~= 'none' and t ~= 'string' then
    return redis.error_reply('WRONGTYPE tier document ' .. KEYS[2] .. ' is a ' .. t)
  end
end
for i = 1, #ops do
  local w = want[ops[i][1]]
  if w then
    local t = redis.call('TYPE', KEYS[ops[i][2]])['ok']
    if t ~= 'none' and t ~= w then
      return redis.error_reply('WRONGTYPE ' .. KEYS[ops[i][2]] .. ' is a ' .. t .. ', not a ' .. w)
    end
  end
end
local doc = false
if mode == 'w' or mode == 'd' then
  local cur = redis.call('GET', KEYS[2])
  if version(cur) ~= tonumber(ARGV[3]) then return {'conflict', cur} end
  if mode == 'w' then
    if ARGV[5] == '0' then
      redis.call('SET', KEYS[2], ARGV[4])
    else
      redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])
    end
    doc = ARGV[4]
  else
    redis.call('DEL', KEYS[2])
  end
elseif mode == 'r' or mode == 't' then
  doc = redis.call('GET', KEYS[2])
  if doc and mode == 't' then redis.call('PEXPIRE', KEYS[2], ARGV[5]) end
end
for i = 1, #ops do
  local op = ops[i]
  local c, k = op[1], KEYS[op[2]]
  if c == 's' then
    redis.call('SET', k, op[3], 'PX', op[4])
  elseif c == 'd' then
    redis.call('DEL', k)
  elseif c == 'i' then
    redis.call('INCRBYFLOAT', k, op[3])
    redis.call('PEXPIRE', k, op[4])
  elseif c == 'h' then
    redis.call('HINCRBYFLOAT', k, op[3], op[4])
    redis.call('PEXPIRE', k, op[5])
  elseif c == 'H' then
    for j = 4, #op, 2 do redis.call('HINCRBYFLOAT', k, op[j], op[j + 1]) end
    redis.call('PEXPIRE', k, op[3])
  elseif c == 'p' then
    redis.call('LPUSH', k, op[3])
    redis.call('LTRIM', k, 0, op[4] - 1)
    redis.call('PEXPIRE', k, op[5])
  elseif c == 'z' then
    redis.call('ZADD', k, op[4], op[3])
    redis.call('ZREMRANGEBYRANK', k, 0, -(op[5] + 1))
    redis.call('PEXPIRE', k, op[6])
  elseif c == 'x' then
    local t = redis.call('PTTL', k)
    if t >= 0 and t < op[3] then redis.call('PEXPIRE', k, op[3]) end
  elseif c == 'w' then
    -- op: field '<hour>:<kind>', hour, amount, window hours, TTL ms (WindowIncrOp)
    redis.call('HINCRBYFLOAT', k, op[3], op[5])
    local w = tonumber(redis.call('HGET', k, 'w')) or 0
    if op[6] > w then
      w = op[6]
      redis.call('HSET', k, 'w', w)
    end
    if redis.call('HLEN', k) > 2 * w + 1 then
      local names = redis.call('HKEYS', k)
      for j = 1, #names do
        local h = tonumber(string.match(names[j], '^(%-?%d+):'))
        if h and h <= op[4] - w then redis.call('HDEL', k, names[j]) end
      end
    end
    if redis.call('PTTL', k) < op[7] then redis.call('PEXPIRE', k, op[7]) end
  end
end
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return {'applied', doc}
"""

_TRACE_WRITE = r"""
-- KEYS[1] trace:<id>, KEYS[2] idx, KEYS[3] cid:<client id> (optional)
-- ARGV[1] trace JSON, ARGV[2] TTL ms, ARGV[3] score (ts), ARGV[4] index member,
-- ARGV[5] id, ARGV[6] expiry cutoff score, ARGV[7] trace_max,
-- ARGV[8] trace key prefix, ARGV[9] client id key prefix
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if KEYS[3] then redis.call('SET', KEYS[3], ARGV[5], 'PX', ARGV[2]) end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[6])
local n = redis.call('ZCARD', KEYS[2])
local max = tonumber(ARGV[7])
if n > max then
  local old = redis.call('ZRANGE', KEYS[2], 0, n - max - 1)
  for i = 1, #old do
    local m = old[i]
    local nl = string.find(m, '\n', 1, true)
    local id = m
    if nl then id = string.sub(m, 1, nl - 1) end
    redis.call('DEL', ARGV[8] .. id)
    if nl then
      local ck = ARGV[9] .. string.sub(m, nl + 1)
      if redis.call('GET', ck) == id then redis.call('DEL', ck) end
    end
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, n - max - 1)
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return n
"""

# The sum of a share window's buckets, hours lo..hi, as exact decimal strings {strong, total};
# a missing (or foreign-typed) hash sums to zero.
_WINDOW_SUM = r"""
local function window(key, lo, hi)
  local s, t = 0, 0
  local f = redis.pcall('HGETALL', key)
  if f['err'] then f = {} end
  for i = 1, #f, 2 do
    local h, kind = string.match(f[i], '^(%-?%d+):([st])$')
    h = tonumber(h)
    if h and h >= lo and h <= hi then
      local v = tonumber(f[i + 1]) or 0
      if kind == 's' then s = s + v else t = t + v end
    end
  end
  return {string.format('%.17g', s), string.format('%.17g', t)}
end
"""

_ROUTER_READ = _WINDOW_SUM + r"""
-- KEYS: [share if ARGV[1] ~= ''], [affinity if ARGV[3] == '1'], [pct if ARGV[4] > 0], arms
-- ARGV[1], ARGV[2]: the share window's first and last hour ('' and '' = no window)
-- returns {{strong, total} or false, affinity, newest percentile samples,
--          {{type, data}, ...} per arm}
local npct = tonumber(ARGV[4])
local i = 1
local share = false
if ARGV[1] ~= '' then
  share = window(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
  i = 2
end
local aff = false
if ARGV[3] == '1' then
  aff = redis.call('GET', KEYS[i])
  i = i + 1
end
local pct = {}
if npct > 0 then
  pct = redis.call('LRANGE', KEYS[i], 0, npct - 1)
  i = i + 1
end
local arms = {}
for j = i, #KEYS do
  local t = redis.call('TYPE', KEYS[j])['ok']
  if t == 'hash' then
    arms[#arms + 1] = {'hash', redis.call('HGETALL', KEYS[j])}
  elseif t == 'string' then
    arms[#arms + 1] = {'string', {redis.call('GET', KEYS[j])}}
  else
    arms[#arms + 1] = {'none', {}}
  end
end
return {share, aff, pct, arms}
"""

_WINDOW_READ = _WINDOW_SUM + r"""
-- KEYS[1] a share window hash; ARGV[1], ARGV[2] the window's first and last hour
return window(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
"""

_LEGACY_FOLD = r"""
-- KEYS[1] a share window hash, KEYS[2..] the per-hour bucket keys of the layout before it
-- (share:<hour>:<kind>); ARGV[1] the hash's TTL ms when no bucket had one, ARGV[i + 1] the
-- hash field of KEYS[i + 1]. Each bucket found is added to its field and deleted in the same
-- atomic call, so a second fold (by this or any sidecar) finds nothing left to add; the hash
-- lives at least as long as the buckets it took in. Returns how many were folded.
local n, keep = 0, 0
for i = 2, #KEYS do
  if redis.call('TYPE', KEYS[i])['ok'] == 'string' then
    local v = tonumber(redis.call('GET', KEYS[i]))
    local ttl = redis.call('PTTL', KEYS[i])
    if v then
      redis.call('HINCRBYFLOAT', KEYS[1], ARGV[i], v)
      n = n + 1
      if ttl > keep then keep = ttl end
    end
    redis.call('DEL', KEYS[i])
  end
end
if n > 0 then
  if keep <= 0 then keep = tonumber(ARGV[1]) end
  if redis.call('PTTL', KEYS[1]) < keep then redis.call('PEXPIRE', KEYS[1], keep) end
end
return n
"""

# A session's tier transitions in flight across sidecars (SPEC §6.4): `o:<request id>` for a
# once-boost, `e:<request id>` for an escalation, scored by when the reservation lapses. A new
# one is refused when the stored escalation count, the once-boosts in flight and an escalation
# in flight (which another escalation joins: racing escalations are one transition) reach
# `max_per_session` — `routing.caps.SessionInFlight.session_count`, counted across sidecars.
_TRANSITION_RESERVE = r"""
-- KEYS[1] the session's tier document, KEYS[2] its reservations (a sorted set)
-- ARGV[1] request id, ARGV[2] kind 'o' | 'e', ARGV[3] now ms, ARGV[4] lapses at ms,
-- ARGV[5] max_per_session, ARGV[6] the reservation's TTL ms (the key's, relative: the
-- sidecar's clock need not be Redis's)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[3])
local count = 0
local doc = redis.call('GET', KEYS[1])
if doc then
  local ok, t = pcall(cjson.decode, doc)
  if ok and type(t) == 'table' and type(t['count']) == 'number' then count = t['count'] end
end
local onces, escalating = 0, false
for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local k = string.sub(m, 1, 2)
  if k == 'o:' then onces = onces + 1 elseif k == 'e:' then escalating = true end
end
if ARGV[2] == 'e' and escalating then
  redis.call('ZADD', KEYS[2], ARGV[4], 'e:' .. ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[6])
  return 1
end
local used = count + onces
if escalating then used = used + 1 end
if used >= tonumber(ARGV[5]) then return 0 end
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2] .. ':' .. ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return 1
"""

SLOT_COMMIT = Script("slot_commit", _SLOT_COMMIT)
TRACE_WRITE = Script("trace_write", _TRACE_WRITE)
ROUTER_READ = Script("router_read", _ROUTER_READ)
WINDOW_READ = Script("window_read", _WINDOW_READ)
LEGACY_FOLD = Script("legacy_fold", _LEGACY_FOLD)
TRANSITION_RESERVE = Script("transition_reserve", _TRANSITION_RESERVE)
ALL_SCRIPTS = (SLOT_COMMIT, TRACE_WRITE, ROUTER_READ, WINDOW_READ, LEGACY_FOLD,
               TRANSITION_RESERVE)
