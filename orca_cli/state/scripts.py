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
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["ALL_SCRIPTS", "ROUTER_READ", "SLOT_COMMIT", "TRACE_WRITE", "Script"]


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    source: str

    @property
    def sha(self) -> str:
        return hashlib.sha1(self.source.encode()).hexdigest()


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
local want = {i = 'string', h = 'hash', p = 'list', z = 'zset'}
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

_ROUTER_READ = r"""
-- KEYS: share keys (ARGV[1] of them), [affinity if ARGV[2] == '1'], [pct if ARGV[3] > 0], arms
-- returns {shares, affinity, newest percentile samples, {{type, data}, ...} per arm}
local ns, npct = tonumber(ARGV[1]), tonumber(ARGV[3])
local i = ns + 1
local shares = {}
if ns > 0 then shares = redis.call('MGET', unpack(KEYS, 1, ns)) end
local aff = false
if ARGV[2] == '1' then
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
return {shares, aff, pct, arms}
"""

SLOT_COMMIT = Script("slot_commit", _SLOT_COMMIT)
TRACE_WRITE = Script("trace_write", _TRACE_WRITE)
ROUTER_READ = Script("router_read", _ROUTER_READ)
ALL_SCRIPTS = (SLOT_COMMIT, TRACE_WRITE, ROUTER_READ)
