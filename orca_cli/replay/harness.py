"""`orca replay`: the seeded corpus through the **real** decision code and a real store (SPEC §10).

Every turn is scored once (`prepare`); its delta, dedupe key and full-transcript score are
reused by every policy and sweep point. The escalation policy runs each turn through
`routing.route.plan_route` on a snapshot `read` from the store and commits its intents with
`state.plan.build_commit` + `store.commit`, exactly as the sidecar does after a billed success
(every replayed turn is one), on a `FakeClock` that advances 30 s a turn, so cache windows,
tier TTLs and hourly share buckets behave as they do live.

Cost model (SPEC §10, `routing.cost`): a warm turn pays the cached read of the previous
request's tokens and a cache write of the rest; a cold one writes the whole prompt; plus 500
output tokens. Turn 1 and every tier or key switch are cold. The escalation policy keeps one
key per session and tier (the channel pin), so its turns are warm unless it switched. The
baselines: cheap-only and frontier-only, with affinity (one key per session: warm after turn 1)
and without (each turn lands on one of N keys at random: warm with probability 1/N).
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
from orca_cli.routing.candidates import key_fp, model_config, speaks
from orca_cli.routing.caps import window_hours
from orca_cli.routing.cost import (
    REPLAY_OUTPUT_TOKENS,
    cold_turn_cost,
    expected_turn_cost,
    warm_turn_cost,
)
from orca_cli.routing.features import Delta, Difficulty, Scorer
from orca_cli.routing.route import RouteInput, plan_route
from orca_cli.routing.target import resolve_target
from orca_cli.state.base import ReadRequest, Store
from orca_cli.state.plan import PlanContext, TurnOutcome, build_commit

__all__ = ["EscalationRun", "Prepared", "baseline_costs", "prepare", "run_escalation"]

TURN_GAP_S = 30.0
SESSION_GAP_S = 600.0  # between sessions: every session starts cold
SERIES_EVERY = 50  # requests between points of `EscalationRun.series`


@dataclass(frozen=True, slots=True)
class Prepared:
    """A turn with its signals, computed once."""

    turn: Turn
    delta: Delta
    full: Difficulty
    banding: float = 0.0  # `Scorer.banding`: what gated_adaptive bands the base tier on


def prepare(corpus: Sequence[Session], scorer: Scorer,
            progress: Callable[[int], None] | None = None) -> list[list[Prepared]]:
    out = []
    for s in corpus:
        rows = [Prepared(t, scorer.delta(t.body, s.api), scorer.full(t.body, s.api),
                         scorer.banding(t.body, s.api).score)
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


async def run_escalation(cfg: Config, prepared: Sequence[Sequence[Prepared]],
                         archetypes: Sequence[str], *, store: Store, clock: FakeClock,
                         caps_enabled: bool = False, ask: str | None = None,
                         scorer: Scorer | None = None, seed: int = 0,
                         progress: Callable[[int], None] | None = None) -> EscalationRun:
    """Drive every session, turn by turn, through resolve and commit."""
    router = _router(cfg)
    esc = router.escalation
    target = resolve_target("orca/" + router.name, cfg)
    scorer = scorer or Scorer(cfg.difficulty)
    rng = random.Random(seed)
    run = EscalationRun(archetypes=list(archetypes))
    served = strong_n = 0
    durable = store.backend == "redis"
    for s_index, session in enumerate(prepared):
        results: list[TurnResult] = []
        prev: tuple[str, str, int] | None = None
        for p in session:
            t = p.turn
            now = clock.now()
            snap = await store.read(ReadRequest(router=router.name, session=t.session_id,
                                                share_hours=window_hours(now, esc.share_window_h)))
            api = "anthropic" if "system" in t.body else "openai"
            inp = RouteInput(target=target, api=api, body=t.body, delta=p.delta,  # type: ignore[arg-type]
                             est_tokens=t.tokens_in, session=t.session_id,
                             ask=ask if t.kind == "user" else None,  # type: ignore[arg-type]
                             dedupe_key=p.delta.dedupe_key(router.name, t.session_id),
                             full=p.full)
            plan = plan_route(cfg, inp, snap, now=now, scorer=scorer, rng=rng,
                              caps_enabled=caps_enabled)
            att = plan.attempts[0]
            ch = cfg.channel(att.channel)
            fp = key_fp(ch, att.key_index)
            mc = model_config(att.model, cfg)
            here = (att.model, att.channel, att.key_index)
            if prev == here:
                cost = warm_turn_cost(t.prefix_tokens, t.delta_tokens, REPLAY_OUTPUT_TOKENS, mc)
            else:
                cost = cold_turn_cost(t.tokens_in, REPLAY_OUTPUT_TOKENS, mc)
            prev = here
            ctx = PlanContext(request_id=f"replay-{s_index}-{len(results)}", router=router.name,
                              session=t.session_id, explicit_session=True, durable_store=durable,
                              esc=esc, now=now)
            outcome = TurnOutcome(billed_success=True, model=att.model, channel=att.channel,
                                  key_index=att.key_index, key_fp=fp,
                                  window_s=float(ch.cache_ttl_s) if ch else 300.0,
                                  prompt_tokens=t.tokens_in, cost_usd=cost)
            await store.commit(build_commit(ctx, plan.decision, snap, outcome))
            strong = plan.tier == "strong"
            served += 1
            strong_n += strong
            run.denied += bool(plan.decision.denied)
            if served % SERIES_EVERY == 0:
                run.series.append(round(strong_n / served, 4))
            results.append(TurnResult(strong, t.needs_strong, plan.decision.reason,
                                      plan.decision.trigger, cost, t.index, t.kind))
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


def baseline_costs(cfg: Config, corpus: Sequence[Session], sessions_norm: int
                   ) -> dict[str, dict[str, float]]:
    """Cheap only / frontier only, with and without affinity."""
    router = _router(cfg)
    out: dict[str, dict[str, float]] = {}
    hard = sum(t.needs_strong for s in corpus for t in s.turns)
    total = sum(len(s.turns) for s in corpus)
    for tier, pool in (("cheap", router.base_pool), ("frontier", router.escalation_pool)):
        for affinity in (True, False):
            cost = 0.0
            for s in corpus:
                model = _pool_model(cfg, pool, s.api)
                mc = model_config(model, cfg)
                n = _keys(cfg, model)
                for i, t in enumerate(s.turns):
                    if i == 0:
                        cost += cold_turn_cost(t.tokens_in, REPLAY_OUTPUT_TOKENS, mc)
                    elif affinity:
                        cost += warm_turn_cost(t.prefix_tokens, t.delta_tokens,
                                               REPLAY_OUTPUT_TOKENS, mc)
                    else:
                        cost += expected_turn_cost(t.prefix_tokens, t.delta_tokens,
                                                   REPLAY_OUTPUT_TOKENS, mc,
                                                   warm_probability=1 / n)
            name = f"{tier}_only_{'affinity' if affinity else 'no_affinity'}"
            out[name] = {"cost_per_1k": round(1000 * cost / max(1, sessions_norm), 4),
                         "strong_share": 1.0 if tier == "frontier" else 0.0,
                         "coverage": 1.0 if tier == "frontier" else 0.0}
    del hard, total
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
    """The weak / mid / strong band shares of the turns served from the base tier, by the
    banding score and the router's t1 / t2 (what `gated_adaptive` would pick), overall and
    per archetype."""
    from orca_cli.routing.strategies.gated_adaptive import BAND_NAMES, band_index

    router = _router(cfg)
    acc: dict[str, Counter[str]] = defaultdict(Counter)
    for name, turns, rows in zip(run.archetypes, run.turns, prepared):
        for t, p in zip(turns, rows):
            if not t.strong:
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
