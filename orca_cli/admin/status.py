"""One session's status for an agent's status bar (SPEC §15): `GET /orca/v1/status`.

Everything `orca statusline` prints, in one small document the sidecar builds from a few
direct key reads (no scan, so it stays fast on a large Redis): the session's tier and why,
the model serving it, its running figures, the cache clock (seconds until the channel pin of
its tier expires, i.e. until its prompt cache goes cold), streak and strikes against what
escalates, and the caps left: escalations left this episode and the router's strong share
against its cap (or the warm-up still running, when the cap is not yet enforced).
"""

from __future__ import annotations

from typing import Any

from orca_cli.admin.requests import MIN_SESSION_PREFIX, session_start
from orca_cli.admin.views import SessionKeys, session_view
from orca_cli.config.schema import Config
from orca_cli.errors import AdminError
from orca_cli.routing.caps import window_hours
from orca_cli.routing.escalation import denial
from orca_cli.routing.route import caps_view
from orca_cli.routing.snapshot import Snapshot
from orca_cli.routing.tiers import TierState
from orca_cli.state.base import ReadRequest, SlotRef, Store

__all__ = ["session_status"]

_KEYS = ("tier", "pin:base", "pin:strong", "chan:base", "chan:strong", "figures")


def _denied(cfg: Config, router: str, snap: Snapshot) -> str:
    """The cap that serves a strong session's next request from base, as the routing decides
    it for a session already strong (`routing.escalation.denial`): "share_cap",
    "workspace_cap" or "". A budget's denial (SPEC §17) depends on the request's route."""
    r = cfg.routers[router]
    return denial(TierState(tier="strong"), caps_view(cfg, r, snap), r.escalation, new=False,
                  escalate=False)


async def _keys(store: Store, router: str, session: str) -> SessionKeys:
    slot = SlotRef.of_session(router, session)
    out: SessionKeys = {}
    for key in _KEYS:
        entry = await store.get(slot, key)
        if entry is not None:
            out[key] = entry
    return out


async def session_status(store: Store, cfg: Config, session: str, *, router: str | None,
                         now: float) -> dict[str, Any]:
    """The status document of `session` (in `router`, else in whichever session-aware router
    served it last); 404 when orca holds nothing for it."""
    if not session or len(session) > 4096:
        raise AdminError("a session id must be 1 to 4096 characters", status=400)
    if router is not None and router not in cfg.routers:
        raise AdminError(f"unknown router {router!r}", status=404)
    names = [router] if router else [n for n, r in cfg.routers.items() if r.session_aware]
    best: dict[str, Any] | None = None
    for name in names:
        keys = await _keys(store, name, session)
        if not keys:
            continue
        view = session_view(cfg, name, session, keys)
        if best is None or (view["last_success"] or 0) > (best["last_success"] or 0):
            best = view
    if best is None and len(session_start(session)) >= MIN_SESSION_PREFIX:  # an id's start
        from orca_cli.admin.service import OperatorError, locate_session

        try:
            r, sid, keys = await locate_session(store, cfg, session, router)
        except OperatorError as exc:
            if exc.status != 404:
                raise
        else:
            best = session_view(cfg, r, sid, keys)
    if best is None:
        raise AdminError(f"no such session {session!r}: orca has no state for it yet",
                         status=404)
    return await _status(store, cfg, best, now)


async def _status(store: Store, cfg: Config, v: dict[str, Any], now: float) -> dict[str, Any]:
    esc = cfg.routers[v["router"]].escalation
    tier, reason, clock = v["tier"], v["reason"], v["cache_clock_s"]
    snap = await store.read(ReadRequest(router=v["router"],
                                        share_hours=window_hours(now, esc.share_window_h)))
    total, strong = snap.share.total, snap.share.strong
    denied = _denied(cfg, v["router"], snap) if tier == "strong" else ""
    if denied:  # strong in its state, served base while a share cap is exceeded
        tier, reason = "base", f"denied:{denied}"
        chan = v["channel_pins"].get("base")
        clock = chan["ttl_s"] if chan else None
    pin = v["pins"].get(tier)  # None once it expired: the next request picks afresh
    return {
        "session_id": v["session_id"], "router": v["router"], "tier": tier,
        "reason": reason, "trigger": v.get("trigger"),
        "model": pin["model"] if pin else None,
        "session_tier": v["tier"],  # the tier state's, which `denied` overrides for serving
        "figures": v["figures"], "cache_clock_s": clock,
        "difficulty_streak": v["difficulty_streak"], "streak_needed": esc.streak,
        "strikes": len(v["strikes"]), "strikes_needed": esc.strikes,
        "escalations_used": v["escalation_count"], "max_per_session": esc.max_per_session,
        "escalations_left": max(0, esc.max_per_session - v["escalation_count"]),
        "share": {"strong": int(strong), "total": int(total),
                  "ratio": round(strong / total, 4) if total else 0.0, "cap": esc.share_cap,
                  "warmup": total < esc.warmup_requests,
                  "warmup_requests": esc.warmup_requests,
                  # after a state loss the warm-up denies strong (SPEC §6.4)
                  "warmup_inverted": snap.state_lost_at is not None},
        "mode": esc.mode, "pending": v.get("pending"), "ts": now,
    }
