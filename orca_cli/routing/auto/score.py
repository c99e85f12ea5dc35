"""Eligibility and scoring of the auto router (SPEC §16). Pure.

Eligibility, in order, over the pool's candidates (each exclusion is kept with its reason):

1. the candidate checks (`no_channel`, `format_mismatch`, `context_window`, `unhealthy`);
2. `pattern`   — matches none of `[auto] models`;
3. `no_price`  — no `[models.X]` table: an unknown price is never a candidate;
4. `price_cap` — input or output price above the spend profile's (or custom) cap, on every
   channel that serves it: a channel's own `prices` entry is its price (SPEC §20), and a
   channel above a cap never serves the model here (the route's channel policy leaves it out,
   `config.auto.channel_gate`), so the caps bind the price the request is billed at;
5. `capability` — workload quality < complexity + capability_margin. When no model passes
   it, the floor is relaxed (`capability_relaxed`) to the most capable band that remains:
   quality within `capability_margin` of the best remaining workload quality — a request too
   hard for every eligible model gets the strongest of them, never the cheapest. Missing
   data never widens eligibility: 1-4 are hard.

Each eligible model gets four factors in [0, 1], higher is better:

    quality = mean over the request's workloads of quality_by_workload[w] (else `quality`)
    price   = 1 - blended / dearest blended among the eligible (1 when all are free); a
              model's blended price is input + output on the channel that would serve it
    latency = fastest / own, over the models with a latency (measured for the channel, else
              the channel's `expected_latency_ms`); 0.5 (neutral) when unknown
    health  = healthy key slots / key slots over the channels that can serve it

    score = Σ WEIGHTS[objective][factor] · factor

| objective | quality | price | latency | health |
| --------- | ------- | ----- | ------- | ------ |
| balanced  | 0.40    | 0.30  | 0.15    | 0.15   |
| quality   | 0.70    | 0.10  | 0.10    | 0.10   |
| cost      | 0.15    | 0.70  | 0.05    | 0.10   |
| latency   | 0.15    | 0.10  | 0.65    | 0.10   |

Highest score first; ties keep the pool order. The ranked list is the fallback order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orca_cli.config.auto import (
    AutoConfig,
    channel_gate,
    matches_patterns,
    price_caps,
    within_caps,
)
from orca_cli.config.schema import Config, ModelConfig
from orca_cli.immutable import immutable
from orca_cli.routing.auto.classify import Classification
from orca_cli.routing.candidates import Candidate
from orca_cli.routing.modes import channel_price

__all__ = ["ALGORITHM", "WEIGHTS", "AutoDecision", "Scored", "rank_auto", "workload_quality"]

ALGORITHM = "auto-v1"
WEIGHTS: dict[str, dict[str, float]] = {
    "balanced": {"quality": 0.40, "price": 0.30, "latency": 0.15, "health": 0.15},
    "quality": {"quality": 0.70, "price": 0.10, "latency": 0.10, "health": 0.10},
    "cost": {"quality": 0.15, "price": 0.70, "latency": 0.05, "health": 0.10},
    "latency": {"quality": 0.15, "price": 0.10, "latency": 0.65, "health": 0.10},
}
NEUTRAL = 0.5


@immutable
class Scored:
    model: str
    score: float
    factors: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "score": round(self.score, 4),
                "factors": {k: round(v, 4) for k, v in self.factors.items()}}


@immutable
class AutoDecision:
    """The auto router's whole decision for the trace and `explain` (content-free)."""

    classification: Classification
    objective: str
    spend_profile: str
    caps: tuple[float | None, float | None]
    ranked: tuple[Scored, ...]
    excluded: tuple[tuple[str, str], ...]  # (model, reason code)
    capability_relaxed: bool = False

    @property
    def ordered(self) -> tuple[str, ...]:
        return tuple(s.model for s in self.ranked)

    def to_json(self) -> dict[str, Any]:
        return {
            "algorithm": ALGORITHM,
            **self.classification.to_json(),
            "objective": self.objective,
            "spend_profile": self.spend_profile,
            "caps": {"input": self.caps[0], "output": self.caps[1]},
            "candidates": [s.to_json() for s in self.ranked],
            "excluded": [{"model": m, "reason": r} for m, r in self.excluded],
            "capability_relaxed": self.capability_relaxed,
            "fallback_order": list(self.ordered),
        }


def workload_quality(m: ModelConfig, workloads: Sequence[str]) -> float:
    """Mean of the model's per-workload quality over `workloads` (`quality` when unset)."""
    if not workloads:
        return m.quality
    return sum(m.quality_by_workload.get(w, m.quality) for w in workloads) / len(workloads)


def _static_gate(model: str, cfg: Config, auto: AutoConfig) -> str | None:
    """The config-only part of eligibility (patterns, known price, some channel within the
    caps)."""
    if not matches_patterns(model, auto.models, cfg):
        return "pattern"
    if model not in cfg.models:
        return "no_price"
    if not within_caps(model, cfg, auto):
        return "price_cap"
    return None


def _channels_gate(c: Candidate, cfg: Config, auto: AutoConfig) -> str | None:
    """`price_cap` (or `pattern`) when none of the candidate's channels may serve it under
    `[auto]`: the candidates of a route were narrowed already; a caller that sourced them
    without the auto policy gets the same answer here."""
    whys = [channel_gate(c.model, ch.channel, cfg, auto) for ch in c.channels]
    return None if any(w is None for w in whys) or not whys else whys[0]


def _price(c: Candidate, cfg: Config) -> float:
    """Input + output $/1M on the channel that would serve the candidate (its first)."""
    m = (channel_price(c.model, c.channels[0].channel, cfg) if c.channels
         else cfg.models[c.model])
    return m.input + m.output


_MEMO_MAX = 4096
_memo: dict[tuple[int, str, AutoConfig], tuple[Config, str | None]] = {}


def _gate(c: Candidate, cfg: Config, auto: AutoConfig) -> str | None:
    """The candidate's exclusion, else the static gate, remembered per config object (the
    memo holds the config itself, so its id cannot be reused while the entry lives)."""
    if c.excluded is not None:
        return c.excluded
    key = (id(cfg), c.model, auto)
    hit = _memo.get(key)
    if hit is not None and hit[0] is cfg:
        return hit[1]
    if len(_memo) >= _MEMO_MAX:
        _memo.clear()
    why = _static_gate(c.model, cfg, auto)
    _memo[key] = (cfg, why)
    return why


def _latency(c: Candidate, cfg: Config, measured: Mapping[str, float]) -> float | None:
    """The model's first channel's measured latency, else its expected_latency_ms."""
    for choice in c.channels:
        if measured.get(choice.channel, 0) > 0:
            return measured[choice.channel]
        ch = cfg.compiled.channel_index.get(choice.channel)
        if ch is not None and ch.expected_latency_ms > 0:
            return ch.expected_latency_ms
    return None


def _health(c: Candidate, cfg: Config) -> float:
    healthy = sum(len(choice.keys) for choice in c.channels)
    names = [choice.channel for choice in c.channels]
    names += [name for name, why in c.filtered if why == "unhealthy"]
    slots = cfg.compiled.key_slots
    total = sum(len(slots.get(name, ())) for name in names)
    return healthy / total if total else 1.0


def rank_auto(candidates: Sequence[Candidate], cfg: Config, auto: AutoConfig,
              cls: Classification, measured: Mapping[str, float] | None = None) -> AutoDecision:
    """Eligible models ranked by the objective's weighted factors (module docstring)."""
    excluded: list[tuple[str, str]] = []
    passed: list[Candidate] = []
    for c in {x.model: x for x in candidates}.values():
        why = _gate(c, cfg, auto) or _channels_gate(c, cfg, auto)
        if why is None:
            passed.append(c)
        else:
            excluded.append((c.model, why))
    quality = {c.model: workload_quality(cfg.models[c.model], cls.workloads) for c in passed}
    floor = cls.complexity + auto.capability_margin
    able = [c for c in passed if quality[c.model] >= floor - 1e-12]
    relaxed = bool(passed) and not able
    if relaxed:  # nothing is capable enough: the most capable band that remains
        best = max(quality.values())
        able = [c for c in passed if quality[c.model] >= best - auto.capability_margin - 1e-12]
    kept = {c.model for c in able}
    excluded.extend((c.model, "capability") for c in passed if c.model not in kept)
    pool = able
    blended = {c.model: _price(c, cfg) for c in pool}
    dearest = max(blended.values(), default=0.0)
    lat = {c.model: _latency(c, cfg, measured or {}) for c in pool}
    fastest = min((v for v in lat.values() if v is not None), default=None)
    weights = WEIGHTS[auto.objective]
    scored: list[Scored] = []
    for c in pool:
        own = lat[c.model]
        factors = {
            "quality": quality[c.model],
            "price": 1.0 - blended[c.model] / dearest if dearest > 0 else 1.0,
            "latency": fastest / own if own is not None and fastest is not None else NEUTRAL,
            "health": _health(c, cfg),
        }
        score = sum(weights[k] * v for k, v in factors.items())
        scored.append(Scored(c.model, score, factors))
    ranked = sorted(scored, key=lambda s: -s.score)
    return AutoDecision(cls, auto.objective, auto.spend_profile, price_caps(auto),
                        tuple(ranked), tuple(excluded), relaxed)
