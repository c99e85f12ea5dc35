"""Budget counters and raised limits (SPEC §17), beside the main store.

    <prefix>:{budgets}:c:<counter>           hash {requests, usd}; counter names come from
                                             `routing/routes/budget.py` (`key:ci:day:2026-12-04`)
    <prefix>:{budgets}:done:<request_id>     the once-per-request marker (24 h)
    <prefix>:{budgets}:limit:<name>:<key>    `orca budget raise` overrides ($; key `-` = none)

`add` counts one request's billed cost into every counter it names exactly once per request
id (a retried commit is a no-op), atomically (one Lua script; every key in one hash slot, so
it holds on Redis Cluster). Counters expire after their window (day 3 d, week 15 d, month and
session 70 d). The memory variant keeps the same in the process.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from orca_cli.routing.routes.budget import Spend

__all__ = ["MemoryBudgets", "RedisBudgets", "effective_limits", "ttl_of"]

_DONE_TTL_S = 86400
_TTL_S = {"day": 3 * 86400, "week": 15 * 86400, "month": 70 * 86400, "all": 70 * 86400}

_ADD = """
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) == false then return 0 end
for i = 2, #KEYS do
  redis.call('HINCRBY', KEYS[i], 'requests', 1)
  redis.call('HINCRBYFLOAT', KEYS[i], 'usd', ARGV[2])
  redis.call('EXPIRE', KEYS[i], ARGV[i + 1])
end
return 1
"""


def ttl_of(counter: str) -> int:
    """How long a counter outlives its window, from its name's window part."""
    parts = counter.rsplit(":", 2)
    return _TTL_S.get(parts[-2] if len(parts) == 3 else "all", _TTL_S["all"])


class MemoryBudgets:
    def __init__(self) -> None:
        self._c: dict[str, Spend] = {}
        self._done: set[str] = set()
        self._limits: dict[str, float] = {}

    async def read(self, counters: Iterable[str]) -> dict[str, Spend]:
        return {c: self._c[c] for c in counters if c in self._c}

    async def add(self, counters: Iterable[str], usd: float, request_id: str) -> bool:
        if request_id in self._done:
            return False
        self._done.add(request_id)
        for c in counters:
            s = self._c.get(c, Spend())
            self._c[c] = Spend(s.requests + 1, s.usd + usd)
        return True

    async def limits(self) -> dict[str, float]:
        return dict(self._limits)

    async def raise_limit(self, name: str, key: str, usd: float) -> None:
        self._limits[f"{name}:{key}"] = usd

    async def all_counters(self) -> dict[str, Spend]:
        return dict(self._c)


class RedisBudgets:
    """`client`: a `redis.asyncio` client with `decode_responses=True`."""

    def __init__(self, client: Any, key_prefix: str) -> None:
        self._r = client
        self._k = f"{key_prefix}:{{budgets}}:"

    async def read(self, counters: Iterable[str]) -> dict[str, Spend]:
        names = list(counters)
        if not names:
            return {}
        pipe = self._r.pipeline(transaction=False)
        for c in names:
            pipe.hmget(self._k + "c:" + c, "requests", "usd")
        rows = await pipe.execute()
        return {c: Spend(int(float(r or 0)), float(u or 0.0)) for c, (r, u) in zip(names, rows, strict=True)
                if r is not None or u is not None}

    async def add(self, counters: Iterable[str], usd: float, request_id: str) -> bool:
        names = list(counters)
        keys = [self._k + "done:" + request_id] + [self._k + "c:" + c for c in names]
        args = [_DONE_TTL_S, repr(float(usd))] + [ttl_of(c) for c in names]
        return bool(await self._r.eval(_ADD, len(keys), *keys, *args))

    async def limits(self) -> dict[str, float]:
        out: dict[str, float] = {}
        async for key in self._r.scan_iter(match=self._k + "limit:*", count=500):
            raw = await self._r.get(key)
            if raw is not None:
                out[key[len(self._k) + 6:]] = float(raw)
        return out

    async def raise_limit(self, name: str, key: str, usd: float) -> None:
        await self._r.set(self._k + f"limit:{name}:{key}", json.dumps(usd))

    async def all_counters(self) -> dict[str, Spend]:
        names = [k[len(self._k) + 2:] async for k in
                 self._r.scan_iter(match=self._k + "c:*", count=500)]
        return await self.read(names)


def effective_limits(configured: Mapping[str, float], raised: Mapping[str, float],
                     key: str | None) -> dict[str, float]:
    """`[budgets]` with `orca budget raise` overrides for `key` (`-` = no key) applied."""
    k = key or "-"
    return {name: raised.get(f"{name}:{k}", usd) for name, usd in configured.items()}
