"""`stats` for the operator (SPEC §1.1a): per router over its share window, and the workspace.

Read from the router slots' hourly `stats:<hour>` hashes and `share` window hashes (fields
`<hour>:s|t`) that every billed-success commit increments (`state/plan.py`), plus any per-hour
`share:<hour>:s|t` keys of the layout before it not folded yet; nothing is written here. The router
figures use the router's `share_window_h`, the same window its share cap reads, so the strong
share printed is the one the cap compares; the workspace uses the widest router window.
After a detected state loss (SPEC §6.4, §9) each router's `share` says `warmup_inverted`:
the warm-up then denies strong until `warmup_requests` requests are counted, where it
otherwise lets strong through — the same `state_lost_at` the resolve reads in its snapshot.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Literal

from orca_cli.config.schema import Config
from orca_cli.routing.caps import window_hours
from orca_cli.state import keys as K
from orca_cli.state.base import ReadRequest, Store

__all__ = ["stats"]


def _hour(key: str) -> int | None:
    parts = key.split(":")
    try:
        return int(parts[1])
    except (IndexError, ValueError):
        return None


async def _share(store: Store, slot: Literal["router", "workspace"], router: str | None,
                 hours: set[int]) -> tuple[float, float]:
    buckets: list[tuple[tuple[int, str] | None, Any]] = []
    for e in await store.scan(slot, router=router, key_prefix=K.SHARE_KEY):
        if e.key == K.SHARE_KEY and isinstance(e.value, Mapping):
            buckets += [(K.parse_share_field(f), v) for f, v in e.value.items()]
        else:
            buckets.append((K.parse_share_key(e.key), e.value))
    strong = total = 0.0
    for bucket, value in buckets:
        if bucket is None or bucket[0] not in hours or not isinstance(value, (int, float)):
            continue
        if bucket[1] == "s":
            strong += float(value)
        else:
            total += float(value)
    return strong, total


async def _state_lost_at(store: Store, cfg: Config) -> float | None:
    """When the store last lost its state, as a request's snapshot reads it (store-wide)."""
    from orca_cli.errors import StoreStateLost

    if not cfg.routers:
        return None
    # no share hours: the smallest read there is (and no fold of older share keys)
    req = ReadRequest(router=next(iter(cfg.routers)), workspace=False)
    try:
        snap = await store.read(req)
    except StoreStateLost:  # detected by this very read: the store recorded it, read again
        snap = await store.read(req)
    return snap.state_lost_at


async def stats(cfg: Config, store: Store, now: float) -> dict[str, Any]:
    """`stats --json` (SPEC §1.1a): per router over its share window, and the workspace."""
    routers: dict[str, Any] = {}
    lost_at = await _state_lost_at(store, cfg)
    for name, r in cfg.routers.items():
        esc = r.escalation
        hours = set(window_hours(now, esc.share_window_h))
        agg: dict[str, float] = defaultdict(float)
        for e in await store.scan("router", router=name, key_prefix="stats:"):
            if _hour(e.key) in hours and isinstance(e.value, Mapping):
                for field, value in e.value.items():
                    if isinstance(value, (int, float)):
                        agg[field] += float(value)
        strong, total = await _share(store, "router", name, hours)
        requests = agg["requests"]
        by_trigger = {k.split(":", 1)[1]: int(v) for k, v in agg.items()
                      if k.startswith("escalations:")}
        by_cap = {k.split(":", 1)[1]: int(v) for k, v in agg.items() if k.startswith("denied:")}
        routers[name] = {
            "requests": int(requests),
            "side_requests": int(agg["side"]),  # of `requests`: housekeeping (SPEC §14.1)
            "strong_share": round(agg["strong"] / requests, 6) if requests else 0.0,
            "escalations": sum(by_trigger.values()),
            "denials": sum(by_cap.values()),
            "cache_hit_ratio": (round(agg["cached_tokens"] / agg["prompt_tokens"], 6)
                                if agg["prompt_tokens"] else 0.0),
            "cost_usd": round(agg["cost_usd"], 8),
            "shadow_would_escalate": int(agg["shadow_would_escalate"]),
            "strong": int(agg["strong"]),
            "escalations_by_trigger": by_trigger,
            "denials_by_cap": by_cap,
            "prompt_tokens": int(agg["prompt_tokens"]),
            "cached_tokens": int(agg["cached_tokens"]),
            "share": {"strong": int(strong), "total": int(total),
                      "ratio": round(strong / total, 6) if total else 0.0,
                      "cap": esc.share_cap, "warmup_requests": esc.warmup_requests,
                      "warmup": total < esc.warmup_requests,
                      "warmup_inverted": lost_at is not None, "state_lost_at": lost_at},
            "window_h": esc.share_window_h,
            "mode": esc.mode,
        }
    window = max((r.escalation.share_window_h for r in cfg.routers.values()), default=24)
    ws_strong, ws_total = await _share(store, "workspace", None,
                                       set(window_hours(now, window)))
    return {"routers": routers,
            "workspace": {"requests": int(ws_total),
                          "strong_share": round(ws_strong / ws_total, 6) if ws_total else 0.0,
                          "strong": int(ws_strong), "cap": cfg.workspace.share_cap,
                          "window_h": window},
            "ts": now}
