"""Operator views of stored keys (SPEC §1.1a): the `session show` object and the pin rows.

Pure functions from the `KeyEntry`s a scan returned to the documented JSON shapes, so the admin
API and the CLI's direct-store path print exactly the same documents. TTLs are the remaining
seconds the store reported (None = no expiry), rounded to a tenth of a second.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from orca_cli.config.schema import Config, EscalationConfig
from orca_cli.routing.tiers import TierState
from orca_cli.state.base import KeyEntry
from orca_cli.state.keys import is_direct_router

__all__ = [
    "SessionKeys",
    "cache_clock",
    "figures",
    "group_sessions",
    "member_text",
    "pin_rows",
    "session_view",
    "ttl",
]

SessionKeys = dict[str, KeyEntry]  # suffix ("tier", "pin:base", ...) -> entry
_SESSION_KEYS = ("tier", "pin:base", "pin:strong", "chan:base", "chan:strong", "figures")
_FIGURES = ("requests", "side_requests", "prompt_tokens", "cached_tokens", "output_tokens")


def ttl(entry: KeyEntry | None) -> float | None:
    if entry is None or entry.ttl_s is None:
        return None
    return round(max(0.0, entry.ttl_s), 1)


def member_text(value: Any) -> str:
    """A stored string read back through the operator decoding (numeric text becomes a float,
    JSON text a document); turned back into the text it was written as."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        import orjson

        return orjson.dumps(value).decode()
    return str(value)


def group_sessions(entries: Iterable[KeyEntry]) -> dict[tuple[str, str], SessionKeys]:
    """Session-slot entries grouped per (router, session); idempotency markers left out, so a
    session whose state expired and left only markers is not listed. Neither is one with
    figures alone: side requests under an id no real turn used (Codex's title request comes
    under a session id of its own) count there, but they make no session. Nor do a concrete
    model's channel pins (`keys.direct_router`): no router, no tier; `pins dump` lists them."""
    out: dict[tuple[str, str], SessionKeys] = {}
    for e in entries:
        if (e.slot.kind != "session" or e.key not in _SESSION_KEYS
                or is_direct_router(e.slot.router)):
            continue
        out.setdefault((e.slot.router, e.slot.session), {})[e.key] = e
    return {k: v for k, v in out.items() if set(v) != {"figures"}}


def _escalation(cfg: Config, router: str) -> EscalationConfig:
    r = cfg.routers.get(router)
    return r.escalation if r is not None else EscalationConfig()


def _model_pin(entry: KeyEntry | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    return {"model": member_text(entry.value), "ttl_s": ttl(entry)}


def _channel_pin(entry: KeyEntry | None) -> dict[str, Any] | None:
    if entry is None or not isinstance(entry.value, Mapping):
        return None
    v = entry.value
    return {"channel": v.get("channel"), "key_index": v.get("key_index"),
            "key_fp": v.get("key_fp"), "ttl_s": ttl(entry)}


def session_view(cfg: Config, router: str, session: str, keys: Mapping[str, KeyEntry]) -> dict[str, Any]:
    """The `session show --json` object (SPEC §1.1a) plus a few helpful extras."""
    tier_e = keys.get("tier")
    doc = tier_e.value if tier_e is not None and isinstance(tier_e.value, dict) else None
    st = TierState.from_doc(doc) or TierState()
    esc = _escalation(cfg, router)
    pending = st.pending.to_doc() if st.pending is not None else None
    view: dict[str, Any] = {
        "session_id": session,
        "router": router,
        "tier": st.tier,
        "reason": st.reason if doc is not None else "default",
        "escalation_count": st.escalation_count,
        "strikes": [{"turn": s.turn, "ts": s.ts, "kind": s.kind, "what": s.what}
                    for s in st.strikes],
        "clean_turns": st.clean_turns,
        "difficulty_streak": st.streak,
        "pending": pending,
        "pins": {t: _model_pin(keys.get(f"pin:{t}")) for t in ("base", "strong")},
        "channel_pins": {t: _channel_pin(keys.get(f"chan:{t}")) for t in ("base", "strong")},
        "ttl_s": ttl(tier_e),
        "figures": figures(keys.get("figures")),
        "cache_clock_s": cache_clock(keys, st.tier),
        # extras
        "trigger": st.trigger or None,
        "max_per_session": esc.max_per_session,
        "escalated_at": st.escalated_at or None,
        "last_success": st.last_success or None,
        "turns": st.turn,
        "mode": esc.mode,
        "version": int(doc.get("v", 0)) if doc is not None else 0,
    }
    if st.shadow is not None:
        view["shadow"] = {"tier": st.shadow.tier, "trigger": st.shadow.trigger or None,
                          "difficulty_streak": st.shadow.streak,
                          "strikes": len(st.shadow.strikes)}
    return view


def figures(entry: KeyEntry | None) -> dict[str, Any]:
    """The session's running totals (SPEC §15), zeros before its first billed success."""
    raw = entry.value if entry is not None and isinstance(entry.value, Mapping) else {}
    out: dict[str, Any] = {k: int(float(raw.get(k, 0) or 0)) for k in _FIGURES}
    out["cost_usd"] = round(float(raw.get("cost_usd", 0) or 0), 8)
    prompt = out["prompt_tokens"]
    out["cached_share"] = round(out["cached_tokens"] / prompt, 4) if prompt else None
    return out


def cache_clock(keys: Mapping[str, KeyEntry], tier: str) -> float | None:
    """Seconds until the session's pinned cache goes cold: the channel pin of the tier it is
    in lives one cache window from its last success (None when no pin is left)."""
    return ttl(keys.get(f"chan:{tier}") or keys.get("chan:base"))


def pin_rows(session_entries: Iterable[KeyEntry],
             affinity_entries: Iterable[KeyEntry] = ()) -> list[dict[str, Any]]:
    """`pins dump --json` rows: `{kind, router, session, tier, value, ttl_s}` (SPEC §1.1a)."""
    rows: list[dict[str, Any]] = []
    for e in session_entries:
        kind, _, tier = e.key.partition(":")
        if e.slot.kind != "session" or kind not in ("pin", "chan") or tier not in ("base", "strong"):
            continue
        if kind == "pin":
            value: Any = member_text(e.value)
        elif isinstance(e.value, Mapping):
            value = {k: e.value.get(k) for k in ("channel", "key_index", "key_fp")}
        else:
            continue
        rows.append({"kind": "model" if kind == "pin" else "channel", "router": e.slot.router,
                     "session": e.slot.session, "tier": tier, "value": value, "ttl_s": ttl(e)})
    for e in affinity_entries:
        if e.slot.kind != "router" or not e.key.startswith("aff:") or not isinstance(e.value, Mapping):
            continue
        value = {k: e.value.get(k) for k in ("channel", "key_index", "key_fp")}
        rows.append({"kind": "affinity", "router": e.slot.router, "session": None,
                     "tier": "base", "value": value, "ttl_s": ttl(e),
                     "prefix": e.key[len("aff:"):], "since": e.value.get("since")})
    return rows
