"""`orca replay`: the seeded corpus through the sidecar's **own** request path and a real
store (SPEC §10).

Every request is scored once (`prepare`); its delta, full-transcript score and banding score
are reused by every policy and sweep point. The escalation policy walks each request through
the Turn path the sidecar serves it on (`replay.walk`): `turn.prepare` (aliases, side-request
detection, session, dedupe key) with the precomputed delta, the store read into the turn
(`StoreGate.read_turn`, the handler's), `turn.decide`, a provider-shaped answer from the first
planned attempt fed to a `ResponseTap`, `turn.settle` and the commit of its batch with its
follow-up — every replayed request is a billed success — on a `FakeClock` that advances 30 s
a request, so cache windows, tier TTLs and hourly share buckets behave as they do live. A
title request is therefore a side request (served by `[routing] side_router`, not a turn), and
a sub-agent naming an aliased small model is served by that alias's router.

Cost model (SPEC §10, `routing.cost`): a warm request pays the cached read of the previous
request's tokens and a cache write of the rest; a cold one writes the whole prompt; plus 500
output tokens. Warm means the previous request of the same conversation (the main one, or a
title request's or sub-agent's own) was served by the same model, channel and key: the first
request of each conversation and every tier or key switch are cold. The answer reports this
usage, so the figures the sidecar keeps agree with the replay's. The escalation policy keeps
one key per session and tier (the channel pin), so its turns are warm unless it switched.
The baselines: cheap-only and frontier-only, with affinity (one key per session: warm after
turn 1) and without (each turn lands on one of N keys at random: warm with probability 1/N).
The main figures run with both share caps lifted (`caps_off`, as `--http` does); the
adversarial run keeps the configured caps.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from orca_cli.clock import FakeClock
from orca_cli.config.schema import Config, RouterConfig
from orca_cli.replay.corpus import Session, Turn
from orca_cli.replay.walk import Prepared, Walker
from orca_cli.routing.candidates import model_config, speaks
from orca_cli.routing.cost import (
    REPLAY_OUTPUT_TOKENS,
    cold_turn_cost,
    expected_turn_cost,
    warm_turn_cost,
)
from orca_cli.routing.features import Scorer
from orca_cli.routing.modes import channel_price
from orca_cli.state.base import Store
from orca_cli.wire.usage import Usage

__all__ = ["EscalationRun", "Prepared", "baseline_costs", "caps_off", "oracle_costs",
           "prepare", "run_escalation"]

TURN_GAP_S = 30.0
SESSION_GAP_S = 600.0  # between sessions: every session starts cold
SERIES_EVERY = 50  # requests between points of `EscalationRun.series`


def prepare(corpus: Sequence[Session], scorer: Scorer,
            progress: Callable[[int], None] | None = None) -> list[list[Prepared]]:
    out = []
    for s in corpus:
        rows = [Prepared(t, scorer.delta(t.body, s.api), scorer.full(t.body, s.api),
                         scorer.banding(t.body, s.api).score, s.api)
                for t in s.turns]
        out.append(rows)
        if progress is not None:
            progress(len(rows))
    return out


@dataclass
class TurnResult:
    strong: bool
    needs_strong: bool
    reason: str
    trigger: str
    cost: float
    index: int
    kind: str
    router: str = ""  # the router that served it (an alias or the side router may move it)
    side: bool = False  # a side request (SPEC §14.1): served, but not a turn of the session


@dataclass
class EscalationRun:
    turns: list[list[TurnResult]] = field(default_factory=list)
    archetypes: list[str] = field(default_factory=list)
    series: list[float] = field(default_factory=list)  # running served-strong share
    denied: int = 0
    audited: int = 0  # denied_cap audit events the store holds after the run

    def summary(self, sessions_norm: int) -> dict[str, Any]:
        flat = [t for s in self.turns for t in s]
        hard = [t for t in flat if t.needs_strong]
        cost = sum(t.cost for t in flat)
        return {"cost_per_1k": round(1000 * cost / max(1, sessions_norm), 4),
                "strong_share": round(sum(t.strong for t in flat) / max(1, len(flat)), 4),
                "coverage": round(sum(t.strong for t in hard) / max(1, len(hard)), 4)}


def _router(cfg: Config) -> RouterConfig:
    return next(r for r in cfg.routers.values() if r.session_aware)


def with_t2(cfg: Config, t2: float) -> Config:
    r = _router(cfg)
    routers = dict(cfg.routers)
    routers[r.name] = replace(r, escalation=replace(r.escalation, t2=t2))
    return replace(cfg, routers=routers)


def caps_off(cfg: Config) -> Config:
    """`cfg` with every router's and the workspace's share cap at 1.0 (a share never exceeds
    it), the report's setting for the main figures."""
    routers = {name: replace(r, escalation=replace(r.escalation, share_cap=1.0))
               for name, r in cfg.routers.items()}
    return replace(cfg, routers=routers, workspace=replace(cfg.workspace, share_cap=1.0))


def _usage(t: Turn, warm: bool) -> Usage:
    """What the answer reports under the replay's cost model."""
    if warm:
        return Usage(t.tokens_in, t.prefix_tokens, t.delta_tokens, REPLAY_OUTPUT_TOKENS)
    return Usage(t.tokens_in, 0, t.tokens_in, REPLAY_OUTPUT_TOKENS)


async def run_escalation(cfg: Config, prepared: Sequence[Sequence[Prepared]],
                         archetypes: Sequence[str], *, store: Store, clock: FakeClock,
                         caps_enabled: bool = False, ask: str | None = None,
                         scorer: Scorer | None = None, seed: int = 0,
                         progress: Callable[[int], None] | None = None) -> EscalationRun:
    """Drive every session, request by request, through the sidecar's Turn path."""
    router = _router(cfg)
    walker = Walker(cfg if caps_enabled else caps_off(cfg), store, clock,
                    scorer or Scorer(cfg.difficulty), random.Random(seed), ask=ask)
    run = EscalationRun(archetypes=list(archetypes))
    served = strong_n = 0
    for s_index, session in enumerate(prepared):
        results: list[TurnResult] = []
        prev: dict[str, tuple[str, str, int]] = {}  # conversation -> model, channel, key
        for p in session:
            t = p.turn
            turn = await walker.decide(p, f"replay-{s_index}-{len(results)}")
            plan = turn.plan
            assert plan is not None
            att = plan.attempts[0]
            here = (att.model, att.channel, att.key_index)
            warm = prev.get(t.conversation) == here
            prev[t.conversation] = here
            mc = channel_price(att.model, att.channel, cfg)
            cost = (warm_turn_cost(t.prefix_tokens, t.delta_tokens, REPLAY_OUTPUT_TOKENS, mc)
                    if warm else cold_turn_cost(t.tokens_in, REPLAY_OUTPUT_TOKENS, mc))
            await walker.settle(turn, _usage(t, warm))
            strong = plan.tier == "strong"
            served += 1
            strong_n += strong
            run.denied += bool(plan.decision.denied)
            if served % SERIES_EVERY == 0:
                run.series.append(round(strong_n / served, 4))
            results.append(TurnResult(strong, t.needs_strong, plan.decision.reason,
                                      plan.decision.trigger, cost, t.index, t.kind,
                                      turn.router_name or "", turn.side is not None))
            clock.advance(TURN_GAP_S)
        run.turns.append(results)
        clock.advance(SESSION_GAP_S)
        if progress is not None:
            progress(len(session))
    run.audited = sum(1 for e in await store.list_audit(router.name)
                      if e.get("event") == "denied_cap")
    return run


def _pool_model(cfg: Config, models: Sequence[str], api: str) -> str:
    ok = [m for m in models if any(speaks(c, api) and m in c.models and c.enabled
                                   for c in cfg.channels)]
    return min(ok, key=lambda m: model_config(m, cfg).input + model_config(m, cfg).output)


def _keys(cfg: Config, model: str) -> int:
    return max(1, max((len(c.keys) for c in cfg.channels if model in c.models), default=1))


def _all_cheap(t: Turn, was_strong: bool) -> bool:
    return False


def _all_strong(t: Turn, was_strong: bool) -> bool:
    return True


def baseline_costs(cfg: Config, corpus: Sequence[Session], sessions_norm: int
                   ) -> dict[str, dict[str, float]]:
    """Cheap only / frontier only, with affinity (one key per conversation: `_labelled_cost`
    with every request on the one tier) and without (each turn after the first on one of N
    keys at random, warm with probability 1/N)."""
    router = _router(cfg)
    out: dict[str, dict[str, float]] = {}
    for tier, strong, rule in (("cheap", False, _all_cheap), ("frontier", True, _all_strong)):
        affine, _, _ = _labelled_cost(cfg, corpus, rule)
        pool = router.escalation_pool if strong else router.base_pool
        loose = 0.0
        for s in corpus:
            model = _pool_model(cfg, pool, s.api)
            mc = model_config(model, cfg)
            n = _keys(cfg, model)
            for i, t in enumerate(s.turns):
                loose += (cold_turn_cost(t.tokens_in, REPLAY_OUTPUT_TOKENS, mc) if i == 0
                          else expected_turn_cost(t.prefix_tokens, t.delta_tokens,
                                                  REPLAY_OUTPUT_TOKENS, mc,
                                                  warm_probability=1 / n))
        for affinity, cost in ((True, affine), (False, loose)):
            name = f"{tier}_only_{'affinity' if affinity else 'no_affinity'}"
            out[name] = {"cost_per_1k": round(1000 * cost / max(1, sessions_norm), 4),
                         "strong_share": 1.0 if strong else 0.0,
                         "coverage": 1.0 if strong else 0.0}
    return out


def _labelled_cost(cfg: Config, corpus: Sequence[Session],
                   strong_at: Callable[[Turn, bool], bool]) -> tuple[float, int, int]:
    """The cost of serving every request of `corpus` on the tier `strong_at(turn, was_strong)`
    picks (`was_strong`: its conversation's previous request was served strong), each tier by
    the cheapest model of its pool for the session's format, one key per conversation and
    tier: a conversation's request is warm when its previous one was served on the same tier,
    cold otherwise. Returns (dollars, requests served strong, needs-strong requests among
    them)."""
    router = _router(cfg)
    cost = 0.0
    strong_n = covered = 0
    for s in corpus:
        models = (model_config(_pool_model(cfg, router.base_pool, s.api), cfg),
                  model_config(_pool_model(cfg, router.escalation_pool, s.api), cfg))
        prev: dict[str, bool] = {}
        for t in s.turns:
            was = prev.get(t.conversation)
            strong = strong_at(t, bool(was))
            mc = models[strong]
            cost += (warm_turn_cost(t.prefix_tokens, t.delta_tokens, REPLAY_OUTPUT_TOKENS, mc)
                     if was is not None and was == strong
                     else cold_turn_cost(t.tokens_in, REPLAY_OUTPUT_TOKENS, mc))
            prev[t.conversation] = strong
            strong_n += strong
            covered += strong and t.needs_strong
    return cost, strong_n, covered


def oracle_costs(cfg: Config, corpus: Sequence[Session], sessions_norm: int
                 ) -> dict[str, dict[str, float]]:
    """What routing that knew every label would cost under the same cost model: the bound the
    escalation policy is measured against (hard-turn coverage 100 %, no false positive).

    `per_request`: each request on the tier its label needs, paying a cold write at every
    switch (a prompt cache does not move between models). `sticky`: a conversation stays
    strong from its first request that needs it, as SPEC §6.5 keeps a session strong inside
    its warm window (which the replay's clock, 30 s a request, never leaves); side
    conversations (title requests, sub-agents) follow their own labels."""
    hard = sum(t.needs_strong for s in corpus for t in s.turns)
    total = sum(len(s.turns) for s in corpus)
    out = {}
    for name, rule in (("per_request", lambda t, was: t.needs_strong),
                       ("sticky", lambda t, was: was or t.needs_strong)):
        cost, strong_n, covered = _labelled_cost(cfg, corpus, rule)
        out[name] = {"cost_per_1k": round(1000 * cost / max(1, sessions_norm), 4),
                     "strong_share": round(strong_n / max(1, total), 4),
                     "coverage": round(covered / max(1, hard), 4)}
    return out


def archetype_outcomes(run: EscalationRun) -> dict[str, dict[str, Any]]:
    acc: dict[str, dict[str, Any]] = defaultdict(lambda: {"sessions": 0, "escalated": 0,
                                                          "by_trigger": Counter(),
                                                          "first_turns": [],
                                                          "false_positives": 0})
    for name, turns in zip(run.archetypes, run.turns):
        a = acc[name]
        a["sessions"] += 1
        first = next((t for t in turns if t.strong), None)
        if first is not None:
            a["escalated"] += 1
            a["by_trigger"][first.trigger or first.reason] += 1
            a["first_turns"].append(first.index)
            if not first.needs_strong:
                a["false_positives"] += 1
    out = {}
    for name, a in acc.items():
        ft = a.pop("first_turns")
        out[name] = {**a, "by_trigger": dict(a["by_trigger"]),
                     "first_turn": round(statistics.mean(ft), 2) if ft else None}
    return out


def band_shares(run: EscalationRun, prepared: Sequence[Sequence[Prepared]],
                cfg: Config) -> dict[str, Any]:
    """The weak / mid / strong band shares of the turns of each session's own conversation
    that the session router served from its base tier, by the banding score and the router's
    t1 / t2 (what `gated_adaptive` would pick), overall and per archetype. Side requests,
    requests another router served (an agent's small-model calls aliased to a background
    router) and the requests of other conversations under the session id (sub-agents) are
    not the session's turns and are not banded here."""
    from orca_cli.routing.strategies.gated_adaptive import BAND_NAMES, band_index

    router = _router(cfg)
    acc: dict[str, Counter[str]] = defaultdict(Counter)
    for name, turns, rows in zip(run.archetypes, run.turns, prepared):
        for t, p in zip(turns, rows):
            if (not t.strong and not t.side and t.router == router.name
                    and p.turn.conversation == "main"):
                acc[name][BAND_NAMES[band_index(p.banding, router)]] += 1

    def shares(c: Counter[str]) -> dict[str, Any]:
        n = sum(c.values())
        return {"base_turns": n, **{b: round(c[b] / n, 4) if n else 0.0 for b in BAND_NAMES}}

    total: Counter[str] = Counter()
    for c in acc.values():
        total.update(c)
    return {"t1": router.t1, "t2": router.t2, "all": shares(total),
            "archetypes": {name: shares(c) for name, c in acc.items()}}


def escalation_latency(run: EscalationRun) -> dict[str, Any]:
    """Hard turns served cheap before the ratchet fired, per session that needed strong."""
    waits = []
    for turns in run.turns:
        if not any(t.needs_strong for t in turns):
            continue
        n = 0
        for t in turns:
            if t.strong:
                break
            n += t.needs_strong
        waits.append(n)
    return {"sessions": len(waits),
            "mean_hard_turns_served_cheap": round(statistics.mean(waits), 3) if waits else None,
            "max": max(waits) if waits else None}
