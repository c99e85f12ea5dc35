"""Budget counters and raised limits (SPEC §17), beside the main store.

    <prefix>:{budgets}:c:<counter>           hash {requests, usd}; counter names come from
                                             `routing/routes/budget.py` (`key:ci:day:2026-12-04`)
    <prefix>:{budgets}:commit:<request_id>   the commit's marker: a request counts once (24 h)
    <prefix>:{budgets}:limit:<name>:<key>    `orca budget raise` overrides ($; key `-` = none)

The request path counts spend in its own commit (`turn/routes.py` `Routed.spend_write`: the
`{budgets}` slot of the one idempotent commit batch, so a retried commit counts once) and
reads the counters with its store read; both stores keep the same keys. This module is the
operator's side on Redis: `orca budget` reads every counter, `orca budget raise` stores a
limit. Counters expire after their window (day 3 d, week 15 d, month and session 70 d).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from orca_cli.routing.routes.budget import Spend
from orca_cli.state.redis_cmds import spends_from

__all__ = ["RedisBudgets", "effective_limits", "ttl_of"]

_TTL_S = {"day": 3 * 86400, "week": 15 * 86400, "month": 70 * 86400, "all": 70 * 86400}


def ttl_of(counter: str) -> int:
    """How long a counter outlives its window, from its name's window part."""
    parts = counter.rsplit(":", 2)
    return _TTL_S.get(parts[-2] if len(parts) == 3 else "all", _TTL_S["all"])


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
        return spends_from(names, rows)

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
