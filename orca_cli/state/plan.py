"""From a resolved decision and the request's outcome to one `CommitBatch` (SPEC §3 step 9).

Shared by the proxy and the replay harness, so both commit exactly the same way. Pure: it
builds the batch; the caller sends it in one `store.commit`.

* Only a billed success writes state: tier document (intents applied onto fresh state), pins,
  share counters, stats, percentile samples. Anything else writes just its trace, plus a
  `denied_cap` audit event when a cap suppressed an escalation (never silent).
* Transitions that merge (escalated, deescalated) are audited and counted once, by the commit
  that changed the tier: with `settle_transitions=True` they stay out of the batch and
  `settle_batch` builds them from what the session slot's `mutate` did on the fresh document
  (eight racing identical escalations are one escalation, one `escalated` event).
* Pins (SPEC §5): the model pin of the tier that served, refreshed on every success, with the
  channel's cache window as TTL — except base pins of explicit sessions on a durable store,
  which last 30 days; while the session is strong every commit extends its base pin to at
  least `tier_ttl_s`. The channel pin `{channel, key_index, key_fp}` lives one cache window.
  A concrete model's request (SPEC §1.3) writes only its channel pin (or, sessionless, its
  affinity), in the slots of `keys.direct_router(model)`, when that model served it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from typing import Any

import orjson

from orca_cli.config.schema import EscalationConfig
from orca_cli.immutable import immutable
from orca_cli.routing.escalation import TierDecision
from orca_cli.routing.intents import (
    Deescalate,
    Escalate,
    Intent,
    OnceBoost,
    RecordTurn,
    Reset,
)
from orca_cli.routing.tiers import TierState
from orca_cli.state import keys as K
from orca_cli.state.apply import apply_to_state, stored_form
from orca_cli.state.base import (
    CommitBatch,
    CommitResult,
    ExpireAtLeastOp,
    HIncrManyOp,
    HIncrOp,
    Op,
    PushOp,
    SetOp,
    SlotRef,
    SlotWrite,
    Snapshot,
    WindowIncrOp,
    ZAddOp,
)

__all__ = [
    "FIGURES_KEY",
    "LONG_PIN_S",
    "RECENT_MAX",
    "SETTLE_SUFFIX",
    "STATS_TTL_S",
    "PlanContext",
    "TierMutate",
    "TurnOutcome",
    "audit_event",
    "build_commit",
    "figures_ops",
    "settle_batch",
    "stats_ops",
]

LONG_PIN_S = 30 * 86400
STATS_TTL_S = 8 * 86400
RECENT_MAX = 1000  # most recently active sessions kept per router
SHARE_TTL_PAD_S = 3600
SETTLE_SUFFIX = ":settle"  # the follow-up commit's id (its own idempotency marker)
FIGURES_KEY = "figures"  # the session's running totals (SPEC §15), a hash in its slot
# The pin keys of the two tiers, spelled once (every billed success writes one or two).
_PIN_KEYS = {tier: K.pin_key(tier) for tier in ("base", "strong")}
_CHAN_KEYS = {tier: K.chan_key(tier) for tier in ("base", "strong")}


@immutable
class TurnOutcome:
    billed_success: bool
    model: str | None = None
    channel: str | None = None
    key_index: int | None = None
    key_fp: str | None = None
    window_s: float = 300.0  # the serving channel's cache window (pin TTL)
    response_strikes: tuple[str, ...] = ()
    prompt_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    # The client got a 4xx other than 408 / 429: its request could not be served as sent
    # (untranslatable, refused by the provider). It leaves no state, not even a denial's audit.
    client_error: bool = False


@immutable
class PlanContext:
    request_id: str
    router: str | None  # None for a concrete-model request
    session: str | None  # None when sessionless
    explicit_session: bool
    durable_store: bool  # Redis: explicit sessions get 30-day base pins
    esc: EscalationConfig
    now: float
    counts_strong_in_workspace: bool = False  # concrete strong-pool model (SPEC §1.3)
    percentile_sample: float | None = None  # a user turn's delta, for threshold = percentile
    linucb: Mapping[str, Sequence[float]] = field(default_factory=dict)  # arm -> increments
    affinity: tuple[str, Mapping[str, Any], float] | None = None  # (key, pin, ttl) sessionless
    actor: str = "client"
    # The tier state decoded from the snapshot's document by the decision (RoutePlan.
    # tier_state): the commit's mutate reuses it when the store hands it that same document.
    base_state: TierState | None = None
    # A concrete model's request (router None): the model, whose pins live in the slots of
    # `keys.direct_router(model)` (SPEC §1.3).
    direct: str | None = None


def audit_event(ctx: PlanContext, event: str, *, trigger: str = "", reason: str = "",
                actor: str = "", note: str = "") -> dict[str, Any]:
    """One audit event; `note`: the operator's `--reason` of the ask it resolves (the key is
    there only when there is one)."""
    event_doc = {"ts": ctx.now, "router": ctx.router or "", "session": ctx.session or "",
                 "request_id": ctx.request_id, "event": event, "trigger": trigger or None,
                 "reason": reason, "actor": actor or ctx.actor}
    if note:
        event_doc["note"] = note
    return event_doc


def _denied_actor(decision: TierDecision) -> str:
    """Who asked for what a cap denied: the engine for difficulty or strikes, else the
    explicit ask's actor (the client, or the operator's pending ask)."""
    if decision.trigger in ("difficulty", "strikes"):
        return "engine"
    ask = decision.evaluations.get("A")
    actor = ask.get("actor") if isinstance(ask, dict) else None
    return actor if isinstance(actor, str) and actor else ""


def _with_response(intents: Sequence[Intent], strikes: tuple[str, ...]) -> tuple[Intent, ...]:
    if not strikes:
        return tuple(intents)
    return tuple(replace(i, response_strikes=strikes) if isinstance(i, RecordTurn) else i
                 for i in intents)


def _transition_audit(ctx: PlanContext, intents: Sequence[Intent],
                      merging: bool = True) -> list[dict[str, Any]]:
    out = []
    for i in intents:
        if not merging and isinstance(i, (Escalate, Deescalate)):
            continue
        if isinstance(i, Escalate) and i.scope == "main":
            out.append(audit_event(ctx, "escalated", trigger=i.trigger, reason=i.trigger,
                                   actor=i.actor, note=i.note))
        elif isinstance(i, OnceBoost):
            out.append(audit_event(ctx, "once", trigger="once", reason="once", actor=i.actor,
                                   note=i.note))
        elif isinstance(i, Reset):
            out.append(audit_event(ctx, "reset", reason="reset", actor=i.actor, note=i.note))
        elif isinstance(i, Deescalate) and i.scope == "main":
            out.append(audit_event(ctx, "deescalated", reason="deescalated", actor="engine"))
    return out


def build_commit(ctx: PlanContext, decision: TierDecision | None, snapshot: Snapshot,
                 outcome: TurnOutcome, *, trace: Mapping[str, Any] | None = None,
                 settle_transitions: bool = False) -> CommitBatch:
    """The request's one commit. `settle_transitions`: leave escalated / deescalated events
    and escalation counters to `settle_batch` (the sidecar, where commits race)."""
    audit: list[dict[str, Any]] = []
    if decision is not None and decision.denied and not outcome.client_error:
        audit.append(audit_event(ctx, "denied_cap", trigger=decision.trigger,
                                 reason=decision.reason, actor=_denied_actor(decision)))
    if not outcome.billed_success:
        return CommitBatch(ctx.request_id, (), tuple(audit), trace)

    served_strong = decision is not None and decision.tier == "strong"
    writes: list[SlotWrite] = []
    hour = int(ctx.now // 3600)
    window = ctx.esc.share_window_h
    share_ttl = window * 3600 + SHARE_TTL_PAD_S
    # The share count of every billed success: one op, in the router's slot and the workspace's.
    count_total = WindowIncrOp(K.SHARE_KEY, hour, "t", 1, window, share_ttl)

    # Most turns carry a turn record alone: no transition to audit or count.
    transitions = False
    if decision is not None:
        for i in decision.intents:
            if not isinstance(i, RecordTurn):
                transitions = True
                break

    if ctx.router is not None and ctx.session is not None:
        writes.append(_session_write(ctx, decision, snapshot, outcome))
        if transitions and decision is not None and decision.evaluated:
            audit.extend(_transition_audit(ctx, decision.intents, not settle_transitions))

    if ctx.router is not None:
        ops: list[Op] = [count_total]
        if served_strong:
            ops.append(WindowIncrOp(K.SHARE_KEY, hour, "s", 1, window, share_ttl))
        more: list[tuple[str, float]] = []
        if served_strong:
            more.append(("strong", 1))
        if decision is not None:
            if decision.denied:
                more.append((f"denied:{decision.denied}", 1))
            for i in decision.intents if transitions else ():
                if isinstance(i, Escalate) and i.scope == "main" and not settle_transitions:
                    more.append((f"escalations:{i.trigger}", 1))
                elif isinstance(i, OnceBoost):
                    more.append(("escalations:once", 1))
            if decision.shadow and decision.shadow.get("would"):
                more.append(("shadow_would_escalate", 1))
        ops += stats_ops(hour, outcome, more=more)
        if ctx.percentile_sample is not None:
            ops.append(PushOp(K.PCT_KEY, repr(round(ctx.percentile_sample, 6)), 1000, 30 * 86400))
        for arm, inc in ctx.linucb.items():
            nonzero = tuple((str(j), v) for j, v in enumerate(inc) if v)
            if nonzero:
                ops.append(HIncrManyOp(K.linucb_key(arm), nonzero, 90 * 86400))
        if ctx.session is not None:
            ops.append(ZAddOp(K.RECENT_KEY, ctx.session, ctx.now, RECENT_MAX, 7 * 86400))
        if ctx.affinity is not None:
            ops.append(_affinity_op(ctx.affinity))
        writes.append(SlotWrite(SlotRef("router", ctx.router), tuple(ops)))
    elif ctx.direct is not None and outcome.model == ctx.direct:
        writes += _direct_writes(ctx, ctx.direct, decision, outcome)

    ws: list[Op] = [count_total]
    if served_strong or ctx.counts_strong_in_workspace:
        ws.append(WindowIncrOp(K.SHARE_KEY, hour, "s", 1, window, share_ttl))
    writes.append(SlotWrite(K.WORKSPACE, tuple(ws)))
    return CommitBatch(ctx.request_id, tuple(writes), tuple(audit), trace)


def _session_write(ctx: PlanContext, decision: TierDecision | None, snapshot: Snapshot,
                   outcome: TurnOutcome) -> SlotWrite:
    assert ctx.router is not None and ctx.session is not None
    served = decision.tier if decision is not None else "base"
    ops: list[Op] = []
    if outcome.model:
        if served == "base" and ctx.explicit_session and ctx.durable_store:
            model_ttl = float(LONG_PIN_S)
        else:
            model_ttl = outcome.window_s
        ops.append(SetOp(_PIN_KEYS.get(served) or K.pin_key(served), outcome.model, model_ttl))
    if outcome.channel is not None and outcome.key_index is not None:
        ops.append(_channel_pin_op(served, outcome))
    ops += figures_ops(outcome, max(float(ctx.esc.tier_ttl_s), outcome.window_s,
                                    float(LONG_PIN_S) if ctx.explicit_session
                                    and ctx.durable_store else 0.0))
    mutate = None
    if decision is not None and decision.evaluated:
        intents = _with_response(decision.intents, outcome.response_strikes)
        mutate = TierMutate(intents, ctx.now, ctx.esc, base=(snapshot.tier, ctx.base_state))
        if decision.state_tier == "strong":
            ops.append(ExpireAtLeastOp(K.pin_key("base"), ctx.esc.tier_ttl_s))
    # By position: slot, ops, mutate, expected_version, tier_ttl_s, base_doc
    return SlotWrite(SlotRef("session", ctx.router, ctx.session), tuple(ops), mutate,
                     snapshot.tier_version, ctx.esc.tier_ttl_s, snapshot.tier)


def _channel_pin_op(tier: str, outcome: TurnOutcome) -> SetOp:
    """The channel pin `{channel, key_index, key_fp}` of `tier`, one cache window (SPEC §5)."""
    pin = {"channel": outcome.channel, "key_index": outcome.key_index, "key_fp": outcome.key_fp}
    return SetOp(_CHAN_KEYS.get(tier) or K.chan_key(tier), orjson.dumps(pin).decode(),
                 outcome.window_s)


def _affinity_op(affinity: tuple[str, Mapping[str, Any], float]) -> SetOp:
    key, pin, ttl = affinity
    return SetOp(K.affinity_key(key), orjson.dumps(dict(pin)).decode(), ttl)


def _direct_writes(ctx: PlanContext, model: str, decision: TierDecision | None,
                   outcome: TurnOutcome) -> list[SlotWrite]:
    """A concrete model's pins (SPEC §1.3, §5), in the slots of `keys.direct_router(model)`:
    its session's channel pin, else its prefix's affinity. No tier state, model pin, figures
    or router counters: the model is the request's own, and no router served it."""
    slots = K.direct_router(model)
    if ctx.session is not None:
        if outcome.channel is None or outcome.key_index is None:
            return []
        tier = decision.tier if decision is not None else "base"
        return [SlotWrite(SlotRef.of_session(slots, ctx.session),
                          (_channel_pin_op(tier, outcome),))]
    if ctx.affinity is not None:
        return [SlotWrite(SlotRef.of_router(slots), (_affinity_op(ctx.affinity),))]
    return []


def stats_ops(hour: int, outcome: TurnOutcome, *, side: bool = False,
              more: Sequence[tuple[str, float]] = ()) -> list[Op]:
    """A router's hourly figures (`orca stats`) for one billed success: requests, tokens,
    cost, and `more` (strong, denials, escalations), as one op on the hour's hash; a side
    request (SPEC §14.1) counts in them too, and under `side` — it is traffic the router
    served and paid for, though never a turn, a share or a decision."""
    fields: list[tuple[str, float]] = [
        ("requests", 1), ("prompt_tokens", outcome.prompt_tokens),
        ("cached_tokens", outcome.cached_tokens), ("cost_usd", outcome.cost_usd), *more]
    if side:
        fields.append(("side", 1))
    return [HIncrManyOp(K.stats_key(hour), tuple(fields), STATS_TTL_S)]


def figures_ops(outcome: TurnOutcome, ttl_s: float, *, side: bool = False) -> tuple[Op, ...]:
    """The session's running totals (SPEC §15: cost so far, prompt and cached tokens,
    requests, side requests), incremented in the session slot by each billed success; they
    live as long as the session's longest-lived key. A side request counts under
    `side_requests` and writes nothing else of the session's."""
    return (HIncrManyOp(FIGURES_KEY, (
        ("side_requests" if side else "requests", 1),
        ("prompt_tokens", outcome.prompt_tokens),
        ("cached_tokens", outcome.cached_tokens),
        ("output_tokens", outcome.output_tokens),
        ("cost_usd", outcome.cost_usd)), ttl_s),)


class TierMutate:
    """The session slot's `mutate`. The store may call it more than once (a version conflict
    re-applies it onto the fresh document); `changed` tells what its latest call, the one
    that was written, did to the tier: `("escalated", trigger)` or `("deescalated", "")`;
    `plain`, whether its output is plain JSON data (`state.base`, by `Mutate`)."""

    __slots__ = ("base", "changed", "esc", "intents", "now", "plain")

    def __init__(self, intents: tuple[Intent, ...], now: float, esc: EscalationConfig, *,
                 base: tuple[Any, TierState | None] | None = None) -> None:
        self.intents = intents
        self.now = now
        self.esc = esc
        self.changed: tuple[str, str] | None = None
        self.plain = False
        # (document, its decoded state): reused when called on that very document object
        self.base = base

    def __call__(self, doc: dict[str, Any] | None) -> dict[str, Any] | None:
        before = doc.get("tier") if isinstance(doc, dict) else None
        known = self.base
        state = (known[1] if known is not None and known[1] is not None and doc is known[0]
                 else TierState.from_doc(doc))
        new = apply_to_state(state, self.intents, self.now, self.esc)
        out = stored_form(new)
        self.plain = _finite(new)
        after = new.tier
        self.changed = None
        if before != "strong" and after == "strong":
            self.changed = ("escalated", new.trigger)
        elif before == "strong" and after != "strong" and any(
                isinstance(i, Deescalate) and i.scope == "main" for i in self.intents):
            self.changed = ("deescalated", "")
        return out


def _finite(st: TierState) -> bool:
    """Whether every float of `st` is finite: its document (`TierState.to_doc`, fresh lists
    and dicts of text, whole numbers, booleans, None and these floats) is then plain JSON
    data, since JSON has no infinity and no NaN. A test holds this to every float field of
    `TierState`, `Strike` and `Pending`."""
    # a sum of floats is finite only if each is (past 1e308 it is not: the document is
    # then left to be decoded, which is only slower)
    total = st.escalated_at + st.window_s + st.last_success + st.episode_started
    for strike in st.strikes:
        total += strike.ts
    if st.pending is not None:
        total += st.pending.at
    return math.isfinite(total) and (st.shadow is None or _finite(st.shadow))


def settle_batch(ctx: PlanContext, batch: CommitBatch,
                 result: CommitResult | None) -> CommitBatch | None:
    """After a commit built with `settle_transitions=True`: the audit event and counter of the
    tier change this commit made, or None when it made none (a racer made it first, or the
    commit was a duplicate or did not happen)."""
    if result is None or ctx.router is None:
        return None
    # A loop, not `next` over a generator: every request's follow-up asks, most find no change.
    for session in batch.writes:
        mutate = session.mutate
        if isinstance(mutate, TierMutate):
            break
    else:
        return None
    if mutate.changed is None or not any(r.slot == session.slot and r.status == "applied"
                                         for r in result.results):
        return None
    event, trigger = mutate.changed
    intents = mutate.intents
    if event == "escalated":
        up = next((i for i in intents if isinstance(i, Escalate) and i.scope == "main"), None)
        audit = audit_event(ctx, "escalated", trigger=trigger, reason=trigger,
                            actor=up.actor if up is not None else "engine",
                            note=up.note if up is not None else "")
        ops: tuple[Op, ...] = (HIncrOp(K.stats_key(int(ctx.now // 3600)),
                                       f"escalations:{trigger}", 1, STATS_TTL_S),)
    else:
        audit = audit_event(ctx, "deescalated", reason="deescalated", actor="engine")
        ops = ()
    writes = (SlotWrite(SlotRef.of_router(ctx.router), ops),) if ops else ()
    return CommitBatch(ctx.request_id + SETTLE_SUFFIX, writes, (audit,))

