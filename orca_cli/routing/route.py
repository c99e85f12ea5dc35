"""`plan_route`: one request's whole routing decision (SPEC §3 steps 3-6). Pure; writes nothing.

From the resolved target, the scored turn and the store snapshot it returns a `RoutePlan`:
the tier decision, the candidates of that tier with their exclusions, what the pins said,
the strategy's ranking, and the ordered upstream `Attempt`s (pinned channel and key first,
then the model's other keys and channels, then the router's fallback models re-checked
against the tier). The HTTP layer walks the attempts; the replay harness uses the same plan.

Order matters (SPEC §6.1): the tier is resolved *before* any pin is read, so a strong session
reads its `:t:strong` pin and a de-escalated one returns to its exact base model.

Choices the SPEC leaves open, made here:
* Fallback models stay inside the request's tier: a base request never falls back onto a
  strong model (that would bypass the caps) and a strong request never silently drops to base.
  With no `fallbacks` configured, only other keys and channels of the chosen model are tried.
* A concrete model request has no router, so no tier state and no pins; it counts as strong
  in the workspace share when the model sits in any router's strong pool, and is refused
  (429, `denied:workspace_cap`) over that cap.
* Escalation `mode = "off"`, a session outside the canary and a degraded store serve base
  without evaluating triggers (reasons `off`, `canary`, `degraded`); the tier state is
  neither read into the decision nor written.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from orca_cli.config.schema import Config, RouterConfig
from orca_cli.routing.candidates import (
    Api,
    Candidate,
    Healthy,
    all_healthy,
    build_candidates,
    check_channel_pin,
    check_model_pin,
)
from orca_cli.routing.caps import CapsView, ShareView, effective_t2, in_canary, share_denied
from orca_cli.routing.escalation import TierDecision, TurnSignals, resolve_tier
from orca_cli.routing.features import Delta, Difficulty, Scorer
from orca_cli.routing.strategies import STRATEGIES, Ranking, StrategySignals
from orca_cli.routing.strikes import error_signatures
from orca_cli.routing.target import Target
from orca_cli.routing.tiers import Ask, Tier, TierState
from orca_cli.state.base import Snapshot

__all__ = ["MAX_FALLBACK_MODELS", "Attempt", "PinRead", "RouteInput", "RoutePlan", "plan_route"]

MAX_FALLBACK_MODELS = 8
MAX_ATTEMPTS = 32  # a bound on the attempt list; the deadline and retry budget bind first


@dataclass(frozen=True, slots=True)
class Attempt:
    """One upstream try: a model on one channel with one key."""

    model: str
    channel: str
    key_index: int
    source: Literal["pin", "affinity", "ranked", "fallback"]


@dataclass(frozen=True, slots=True)
class PinRead:
    """What one pin read said, for the trace and for the commit (drop a stale pin)."""

    kind: Literal["model", "channel", "affinity"]
    tier: Tier
    value: Any
    status: Literal["hit", "miss", "dropped", "skipped"]
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "tier": self.tier, "value": self.value,
                "status": self.status, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class RouteInput:
    """Everything about the request the decision reads (parsed once by the caller)."""

    target: Target
    api: Api
    body: Mapping[str, Any]
    delta: Delta
    est_tokens: int
    session: str | None  # None: sessionless (router not session-aware, or opted out)
    ask: Ask | None = None  # X-OrcaRouter-Tier
    dedupe_key: str = ""
    degraded: bool = False  # the store could not be read: base, no escalation
    full: Difficulty | None = None  # a full-transcript score computed earlier (the replay)


@dataclass(frozen=True, slots=True)
class RoutePlan:
    router: RouterConfig | None
    decision: TierDecision
    candidates: tuple[Candidate, ...]
    attempts: tuple[Attempt, ...]
    pins: tuple[PinRead, ...] = ()
    ranking: Ranking | None = None
    full: Difficulty | None = None
    full_skipped: str | None = None
    caps: CapsView | None = None
    # Set when the request is refused before any upstream is tried: (status, kind, message).
    refusal: tuple[int, str, str] | None = None
    counts_strong_in_workspace: bool = False
    evidence: dict[str, Any] = field(default_factory=dict)
    # The session's tier state the decision read (decoded from `snapshot.tier`), so the
    # commit need not decode the same document again.
    tier_state: TierState | None = None

    @property
    def tier(self) -> Tier:
        return self.decision.tier

    @property
    def dropped_pins(self) -> tuple[str, ...]:
        """Store suffixes of pins to delete at commit (`pin:<tier>`, `chan:<tier>`)."""
        prefix = {"model": "pin", "channel": "chan"}
        return tuple(f"{prefix[p.kind]}:{p.tier}" for p in self.pins
                     if p.status == "dropped" and p.kind in prefix)


def _fresh_conversation(body: Mapping[str, Any]) -> bool:
    """No assistant message in the body (`messages`, or a Responses `input` list)."""
    items = body.get("messages", body.get("input"))
    if not isinstance(items, list):
        return True
    return not any(isinstance(m, Mapping) and m.get("role") == "assistant" for m in items)


def _caps_view(cfg: Config, router: RouterConfig, snapshot: Snapshot) -> CapsView:
    esc = router.escalation
    return CapsView(
        share=ShareView(snapshot.share.strong, snapshot.share.total),
        workspace_share=ShareView(snapshot.workspace_share.strong, snapshot.workspace_share.total),
        share_cap=esc.share_cap,
        workspace_cap=cfg.workspace.share_cap,
        warmup_requests=esc.warmup_requests,
        state_lost_at=snapshot.state_lost_at,
    )


def _plain(tier: Tier, reason: str) -> TierDecision:
    """A decision that evaluates no trigger and writes no tier state."""
    return TierDecision(tier=tier, reason=reason, evaluated=False, state_tier=tier)


def _window(cfg: Config, candidates: Sequence[Candidate]) -> float:
    """The cache window of the first usable candidate's first channel (the strong pin TTL)."""
    for c in candidates:
        if c.excluded is None and c.channels:
            ch = cfg.channel(c.channels[0].channel)
            if ch is not None:
                return float(ch.cache_ttl_s)
    return 300.0


def plan_route(
    cfg: Config,
    inp: RouteInput,
    snapshot: Snapshot,
    *,
    now: float,
    scorer: Scorer,
    healthy: Healthy = all_healthy,
    rng: random.Random | None = None,
    caps_enabled: bool = True,
) -> RoutePlan:
    """Decide tier, model, channel and key order for one request (SPEC §3 steps 3-6)."""
    rng = rng or random.Random()
    t = inp.target
    if t.kind == "model":
        return _plan_model(cfg, inp, snapshot, healthy=healthy, rng=rng)
    assert t.router is not None
    router = cfg.routers[t.router]
    mode = t.mode_for(router.mode)
    esc = router.escalation

    def pool(models: Sequence[str]) -> tuple[Candidate, ...]:
        return build_candidates(models, inp.api, inp.est_tokens, cfg, mode=mode,
                                healthy=healthy, rng=rng, channel=t.channel)

    strong_pool = router.escalation_pool
    escalates = bool(strong_pool) and esc.mode != "off"
    base_models = router.base_pool if escalates else router.allowed_models
    strong = pool(strong_pool) if escalates else ()
    caps = _caps_view(cfg, router, snapshot)
    if not caps_enabled:
        caps = CapsView(share=caps.share, workspace_share=caps.workspace_share,
                        share_cap=caps.share_cap, workspace_cap=caps.workspace_cap,
                        warmup_requests=caps.warmup_requests,
                        state_lost_at=caps.state_lost_at, enabled=False)
    evidence: dict[str, Any] = {}
    state: TierState | None = None

    if inp.session is None:
        decision = _plain("base", "no_session")
    elif not escalates:
        decision = _plain("base", "off")
    elif inp.degraded:
        decision = _plain("base", "degraded")
    elif not in_canary(router.name, inp.session, esc.canary):
        decision = _plain("base", "canary")
    else:
        signatures = error_signatures(inp.delta.tool_result_texts)
        evidence["signatures"] = len(signatures)
        sig = TurnSignals(dedupe_key=inp.dedupe_key, delta_score=inp.delta.score,
                          user_turn=inp.delta.is_user_turn, signatures=signatures, ask=inp.ask,
                          fresh=_fresh_conversation(inp.body))
        t2 = effective_t2(threshold=esc.threshold, t2=esc.t2, t1=esc.t1,
                          percentile=esc.percentile, samples=snapshot.percentile_samples)
        state = TierState.from_doc(snapshot.tier)
        decision = resolve_tier(
            state, sig, caps, esc, now=now, t2=t2,
            strong_window_s=_window(cfg, strong),
            strong_available=any(c.excluded is None for c in strong),
        )

    candidates = strong if decision.tier == "strong" else pool(base_models)
    return _select(cfg, inp, router, decision, candidates, snapshot, caps, evidence,
                   scorer=scorer, healthy=healthy, rng=rng, state=state)


def _select(cfg: Config, inp: RouteInput, router: RouterConfig, decision: TierDecision,
            candidates: tuple[Candidate, ...], snapshot: Snapshot, caps: CapsView,
            evidence: dict[str, Any], *, scorer: Scorer, healthy: Healthy,
            rng: random.Random, state: TierState | None = None) -> RoutePlan:
    """Step 6: the pin within the tier, else the strategy; then the attempt order."""
    tier = decision.tier
    pins: list[PinRead] = []
    usable = [c for c in candidates if c.excluded is None]
    if not usable:
        why = "; ".join(f"{c.model}: {c.reason}" for c in candidates) or "the pool is empty"
        return RoutePlan(router, decision, candidates, (), tuple(pins), caps=caps,
                         refusal=(503, "no_candidate", f"no model of router {router.name!r} "
                                  f"can serve this request in the {tier} tier ({why})"),
                         evidence=evidence, tier_state=state)

    model: str | None = None
    ranking: Ranking | None = None
    full: Difficulty | None = None
    full_skipped: str | None = None
    if inp.session is not None:
        pinned = snapshot.pins.get(tier)
        ok, why = check_model_pin(pinned, candidates)
        if ok:
            model = pinned
            pins.append(PinRead("model", tier, pinned, "hit", "ok"))
        else:
            status: Literal["miss", "dropped"] = "miss" if pinned is None else "dropped"
            pins.append(PinRead("model", tier, pinned, status, why))
    if model is None:
        if router.strategy == "gated_adaptive":
            full = inp.full if inp.full is not None else scorer.full(inp.body, inp.api)
        else:
            full_skipped = "strategy"
        banding = (scorer.banding(inp.body, inp.api).score
                   if router.strategy == "gated_adaptive" else None)
        signals = StrategySignals(full.score if full else None, inp.delta.difficulty.values,
                                  banding)
        ranking = STRATEGIES[router.strategy](candidates, cfg, router, signals,
                                              snapshot.linucb, rng)
        model = ranking.ordered[0] if ranking.ordered else usable[0].model
    else:
        full_skipped = "pinned"

    first: tuple[str, int, str] | None = None  # (channel, key_index, source)
    if inp.session is not None:
        raw = snapshot.channel_pins.get(tier)
        ok, keep, why = check_channel_pin(raw, model, cfg, healthy, inp.api)
        value = dict(raw) if raw is not None else None
        if ok and raw is not None:
            first = (str(raw["channel"]), int(raw["key_index"]), "pin")
            pins.append(PinRead("channel", tier, value, "hit", "ok"))
        else:
            pins.append(PinRead("channel", tier, value,
                                "miss" if raw is None or keep else "dropped", why))
    elif snapshot.affinity is not None:
        ok, _keep, why = check_channel_pin(snapshot.affinity, model, cfg, healthy, inp.api)
        if ok:
            first = (str(snapshot.affinity["channel"]), int(snapshot.affinity["key_index"]),
                     "affinity")
        pins.append(PinRead("affinity", tier, dict(snapshot.affinity),
                            "hit" if ok else "skipped", why))

    attempts = _attempts(cfg, router, model, candidates, first, inp, healthy, rng)
    return RoutePlan(router, decision, candidates, attempts, tuple(pins), ranking, full,
                     full_skipped, caps, evidence=evidence, tier_state=state)


def _attempts(cfg: Config, router: RouterConfig | None, model: str,
              candidates: Sequence[Candidate], first: tuple[str, int, str] | None,
              inp: RouteInput, healthy: Healthy, rng: random.Random) -> tuple[Attempt, ...]:
    """Pinned (channel, key) first, then the model's channels and keys, then fallbacks."""
    out: list[Attempt] = []
    seen: set[tuple[str, str, int]] = set()

    def add(m: str, channel: str, key: int, source: Any) -> None:
        if (m, channel, key) not in seen and len(out) < MAX_ATTEMPTS:
            seen.add((m, channel, key))
            out.append(Attempt(m, channel, key, source))

    if first is not None:
        add(model, first[0], first[1], first[2])
    by_model = {c.model: c for c in candidates if c.excluded is None}
    chosen = by_model.get(model)
    if chosen is not None:
        for ch in chosen.channels:
            for k in ch.keys:
                add(model, ch.channel, k, "ranked")
    if router is not None and inp.target.channel is None:
        # Fallback models in order, each re-checked: it must be a usable candidate of this
        # tier's pool (policy, tier and caps were applied when the pool was built).
        for fb in router.fallbacks[:MAX_FALLBACK_MODELS]:
            c = by_model.get(fb)
            if c is None or fb == model:
                continue
            for ch in c.channels:
                for k in ch.keys:
                    add(fb, ch.channel, k, "fallback")
    return tuple(out)


def _plan_model(cfg: Config, inp: RouteInput, snapshot: Snapshot, *, healthy: Healthy,
                rng: random.Random) -> RoutePlan:
    """A concrete model: only its own channels and keys; the workspace cap still binds."""
    t = inp.target
    assert t.model is not None
    counts_strong = t.model in cfg.strong_models()
    candidates = build_candidates([t.model], inp.api, inp.est_tokens, cfg,
                                  mode=t.mode_for("balanced"), healthy=healthy, rng=rng,
                                  channel=t.channel)
    tier: Tier = "strong" if counts_strong else "base"
    caps = CapsView(share=ShareView(), workspace_share=ShareView(
        snapshot.workspace_share.strong, snapshot.workspace_share.total),
        workspace_cap=cfg.workspace.share_cap)
    if counts_strong and share_denied(caps.workspace_share, caps.workspace_cap,
                                      caps.warmup_requests,
                                      after_loss=snapshot.state_lost_at is not None):
        decision = TierDecision(tier="base", reason="denied:workspace_cap",
                                denied="workspace_cap", evaluated=False)
        msg = (f"model {t.model!r} is a frontier model and the workspace's served-strong "
               f"share is over its cap ({caps.workspace_cap:.0%}); use a router or a "
               f"base-tier model")
        return RoutePlan(None, decision, candidates, (), caps=caps,
                         refusal=(429, "workspace_cap", msg), counts_strong_in_workspace=True)
    decision = _plain(tier, "default")
    usable = [c for c in candidates if c.excluded is None]
    if not usable:
        why = candidates[0].reason if candidates else "not configured"
        return RoutePlan(None, decision, candidates, (), caps=caps,
                         refusal=(503, "no_candidate", f"model {t.model!r} cannot be served: "
                                  f"{why}"), counts_strong_in_workspace=counts_strong)
    first = None
    pins: tuple[PinRead, ...] = ()
    if snapshot.affinity is not None:
        ok, _keep, why = check_channel_pin(snapshot.affinity, t.model, cfg, healthy, inp.api)
        if ok:
            first = (str(snapshot.affinity["channel"]), int(snapshot.affinity["key_index"]),
                     "affinity")
        pins = (PinRead("affinity", tier, dict(snapshot.affinity), "hit" if ok else "skipped",
                        why),)
    attempts = _attempts(cfg, None, t.model, candidates, first, inp, healthy, rng)
    return RoutePlan(None, decision, candidates, attempts, pins, caps=caps,
                     full_skipped="concrete_model", counts_strong_in_workspace=counts_strong)
