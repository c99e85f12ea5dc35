"""`orca budget` and `orca budget raise` over a `Store` (SPEC §17): no HTTP, no rendering.

The admin API (`GET /orca/v1/budgets`, `POST /orca/v1/budgets/{name}/raise`) and the CLI's
direct path (Redis, no sidecar running) both call these, so both print the same documents,
on either backend.

`budget_report` lists every budget with its current window's spend against the limit in
force: `day_usd` and `month_usd` one row per inbound key (`-`: requests without one, or every
request when no keys are configured), `session_usd` one row per session that spent anything.
A session row's limit is the one in force for the inbound key its requests carried (its
`keys`, read from the per-key parts of its spend, `routing.routes.budget.session_holders`);
a session spent under several holders shows the lowest of their limits, the first to refuse.
The limit in force is the `[budgets]` value with any `orca budget raise` override applied
(`state.budgets.effective_limits`, as the request path applies it); a budget left at 0 has no
limit, whatever was raised, since the request path enforces only budgets above 0 — which is
why `raise_budget` refuses to raise one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from orca_cli.config.schema import Config
from orca_cli.errors import AdminError
from orca_cli.routing.routes.budget import (
    Spend,
    Window,
    counter_key,
    format_usd,
    session_holders,
)
from orca_cli.state.base import Store
from orca_cli.state.budgets import StoreBudgets, effective_limits
from orca_cli.turn.routes import BUDGET_NAMES

__all__ = ["budget_report", "budget_rows", "raise_budget"]

_KEY_WINDOWS: tuple[tuple[str, Window], ...] = (("day_usd", "day"), ("month_usd", "month"))
_SESSION_HEAD, _SESSION_TAIL = "session:", ":all:-"
MAX_ACTOR = 64


def _configured(cfg: Config) -> dict[str, float]:
    """The `[budgets]` the request path enforces (> 0), by name."""
    return {n: float(getattr(cfg.budgets, n)) for n in BUDGET_NAMES
            if getattr(cfg.budgets, n) > 0}


def _holders(cfg: Config) -> list[str]:
    return [k.name for k in cfg.inbound_keys] + ["-"]


async def budget_report(store: Store, cfg: Config, now: float) -> dict[str, Any]:
    """`{"budgets": rows}`: every budget's live spend in its window (see `budget_rows`)."""
    book = StoreBudgets(store)
    counters = await book.all_counters()
    raised = await book.limits(f"{n}:{k}" for n in BUDGET_NAMES for k in _holders(cfg))
    return {"budgets": budget_rows(cfg, counters, raised, now)}


def budget_rows(cfg: Config, counters: Mapping[str, Spend], raised: Mapping[str, float],
                now: float) -> list[dict[str, Any]]:
    """One row per budget and holder: `budget, holder, window, spent_usd, requests,
    limit_usd` (in force, None = no budget), `configured_usd`, `raised`, `share` (of the
    limit in force). A session row also has `keys`: the inbound keys its requests carried
    (`-`: none), whose `session_usd` limit is the one in force (the lowest, for several);
    and, with keys configured, `key_limits_usd`: the other holders' limits where they differ
    (what the session's requests would get under another key)."""
    configured = _configured(cfg)
    rows: list[dict[str, Any]] = []
    for key in _holders(cfg):
        limits = effective_limits(configured, raised, key)
        for name, window in _KEY_WINDOWS:
            c = counter_key("key", key, window, now)
            rows.append(_row(name, f"key {key}", c.rsplit(":", 1)[1], counters.get(c),
                             limits.get(name), configured.get(name)))
    session_limits = {k: effective_limits(configured, raised, k).get("session_usd")
                      for k in _holders(cfg)}
    parts = session_holders(counters)
    for c, spend in sorted(counters.items()):
        if c.startswith(_SESSION_HEAD) and c.endswith(_SESSION_TAIL):
            sid = c[len(_SESSION_HEAD):-len(_SESSION_TAIL)]
            keys = _session_keys(spend, parts.get(sid, {}), session_limits)
            found = [lim for k in keys if (lim := session_limits.get(k)) is not None]
            limit = min(found) if found else None
            row = _row("session_usd", f"session {sid}", "session", spend, limit,
                       configured.get("session_usd"))
            row["keys"] = keys
            others = {k: lim for k, lim in session_limits.items()
                      if lim is not None and lim != limit}
            if cfg.inbound_keys and others:
                row["key_limits_usd"] = others
            rows.append(row)
    return rows


def _session_keys(total: Spend, parts: Mapping[str, Spend],
                  known: Mapping[str, float | None]) -> list[str]:
    """The holders whose requests spent in a session: the configured keys with a part of
    it, and `-` for the requests the keyed parts leave over (those without a key, and any
    counted before the parts were kept)."""
    keys = sorted(k for k in parts if k in known)
    if total.requests > sum(parts[k].requests for k in keys) or not keys:
        keys.append("-")
    return keys


def _row(name: str, holder: str, window: str, spend: Spend | None, limit: float | None,
         configured: float | None) -> dict[str, Any]:
    usd = spend.usd if spend is not None else 0.0
    return {"budget": name, "holder": holder, "window": window, "spent_usd": round(usd, 6),
            "requests": spend.requests if spend is not None else 0, "limit_usd": limit,
            "configured_usd": configured, "raised": limit is not None and limit != configured,
            "share": round(usd / limit, 4) if limit else None}


async def raise_budget(store: Store, cfg: Config, name: str, usd: object,
                       key: str | None = None, *, actor: str = "operator",
                       now: float) -> dict[str, Any]:
    """Set `name`'s limit for inbound key `key` (None: requests without one) to `usd`, for
    every sidecar on the store from its next request; audited as `budget_raised`. 400 for a
    bad name or amount, 404 for a key the config does not name, 409 for a budget left at 0."""
    if name not in BUDGET_NAMES:
        raise AdminError(f"NAME must be one of {', '.join(BUDGET_NAMES)}, got {name!r}",
                         status=400)
    amount = float(usd) if isinstance(usd, (int, float)) and not isinstance(usd, bool) else 0.0
    if not (math.isfinite(amount) and amount > 0):
        raise AdminError(f"USD must be a number > 0, got {usd!r}", status=400)
    keys = [k.name for k in cfg.inbound_keys]
    if key is not None and key not in keys:
        known = ", ".join(keys) or "none configured"
        raise AdminError(f"--key {key} names no [[inbound_keys]] entry ({known})", status=404)
    configured = _configured(cfg).get(name)
    if configured is None:
        raise AdminError(f"[budgets] {name} is 0 (no budget) in the config, so there is no limit "
                         f"to raise; set [budgets] {name} in the config instead",
                         status=409)
    holder = key or "-"
    book = StoreBudgets(store)
    before = (await book.limits([f"{name}:{holder}"])).get(f"{name}:{holder}", configured)
    who = f"key {key}" if key else ("requests without an inbound key" if keys
                                    else "every request")
    event = {"ts": now, "router": "", "session": "", "event": "budget_raised",
             "trigger": None, "actor": "".join(c for c in actor if c.isprintable())[:MAX_ACTOR],
             "reason": f"{name} for {who}: {format_usd(before)} -> {format_usd(amount)}"}
    await book.raise_limit(name, holder, amount, audit=(event,))
    return {"budget": name, "key": key, "holder": f"key {holder}", "limit_usd": amount,
            "previous_limit_usd": before, "configured_usd": configured,
            "message": f"{name} for {who} is now {format_usd(amount)} (was {format_usd(before)}); "
                       "sidecars on this store apply it from their next request"}
