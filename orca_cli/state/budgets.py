"""Budget counters and raised limits (SPEC §17), beside the main store.

    <prefix>:{budgets}:c:<counter>           hash {requests, usd}; counter names come from
                                             `routing/routes/budget.py` (`key:ci:day:2026-12-04`)
    <prefix>:{budgets}:commit:<request_id>   the commit's marker: a request counts once (kept
                                             24 h on Redis, an hour on the memory store)
    <prefix>:{budgets}:limit:<name>:<key>    `orca budget raise` overrides ($; key `-` = none)

The request path counts spend in its own commit (`turn/routes.py` `Routed.spend_write`: the
`{budgets}` slot of the one idempotent commit batch, so a retried commit counts once) and
reads the counters with its store read; both stores keep the same keys. This module is the
operator's side: `StoreBudgets` over any `Store` (what the admin API and the CLI's direct
path use: `orca budget` reads every counter, `orca budget raise` stores a limit with a
commit, so a raise on the memory store applies at the sidecar's next request). Counters expire after their window (day 3 d, week
15 d, month and session 70 d); a raised limit stands until raised again.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Iterable, Mapping
from typing import Any

from orca_cli.routing.routes.budget import Spend
from orca_cli.state import keys as K
from orca_cli.state.base import CommitBatch, SetOp, SlotWrite, Store

__all__ = ["LIMIT_TTL_S", "StoreBudgets", "effective_limits", "ttl_of"]

# A `SetOp` needs a TTL: a raised limit stands ten years, i.e. until it is raised again.
LIMIT_TTL_S = 10 * 365 * 86400

_TTL_S = {"day": 3 * 86400, "week": 15 * 86400, "month": 70 * 86400, "all": 70 * 86400}


def ttl_of(counter: str) -> int:
    """How long a counter outlives its window, from its name's window part."""
    parts = counter.rsplit(":", 2)
    return _TTL_S.get(parts[-2] if len(parts) == 3 else "all", _TTL_S["all"])


class StoreBudgets:
    """Budget counters and raised limits through a `Store` (either backend): the operator's
    side that a running sidecar's admin API and the CLI's direct path share.

    Reads, writes and the listing of counters go through the store's own calls
    (`scan("budgets")`, `read_counters`, `commit`)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def all_counters(self) -> dict[str, Spend]:
        """Every counter the store holds, read in one round trip (`read_counters`, as the
        request path's budget nodes read them) after one scan of the `{budgets}` slot."""
        head = K.budget_counter_key("")
        names = sorted({e.key[len(head):]
                        for e in await self._store.scan("budgets", key_prefix=head)})
        read = getattr(self._store, "read_counters", None)
        if not names or read is None:
            return {}
        got: dict[str, Spend] = await read(tuple(names))
        return got

    async def limits(self, wanted: Iterable[str]) -> dict[str, float]:
        """The raised limits among `wanted` (`<name>:<key>`), as `effective_limits` takes them,
        from one scan of the `{budgets}` slot."""
        head = K.budget_limit_key("")
        want = set(wanted)
        out: dict[str, float] = {}
        for e in await self._store.scan("budgets", key_prefix=head):
            name_and_key = e.key[len(head):]
            usd = _usd(e.value) if name_and_key in want else None
            if usd is not None:
                out[name_and_key] = usd
        return out

    async def raise_limit(self, name: str, key: str, usd: float, *,
                          audit: tuple[Mapping[str, Any], ...] = ()) -> None:
        """Store `usd` as `name`'s limit for inbound key `key` (`-`: requests without one),
        with `audit` events, in one commit: the memory store applies it atomically, and every
        sidecar on a Redis store reads it with its next request's budget read."""
        op = SetOp(K.budget_limit_key(f"{name}:{key}"), json.dumps(usd), LIMIT_TTL_S)
        rid = f"adm:budget:{secrets.token_hex(8)}"
        await self._store.commit(CommitBatch(rid, (SlotWrite(K.BUDGETS, (op,)),), audit))


def _usd(value: Any) -> float | None:
    try:
        usd = float(value)
    except (TypeError, ValueError):
        return None
    return usd if math.isfinite(usd) else None


def effective_limits(configured: Mapping[str, float], raised: Mapping[str, float],
                     key: str | None) -> dict[str, float]:
    """`[budgets]` with `orca budget raise` overrides for `key` (`-` = no key) applied."""
    k = key or "-"
    return {name: raised.get(f"{name}:{k}", usd) for name, usd in configured.items()}
