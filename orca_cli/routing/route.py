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
* A concrete model request has no router, so no tier state, no model pin and no escalation;
  it keeps a router's channel pin and affinity (its session's, per model, else its prefix's;
  SPEC §1.3, §5). It counts as strong in the workspace share when the model sits in any
  router's strong pool, and is refused (429, `denied:workspace_cap`) over that cap.
* Escalation `mode = "off"`, a session outside the canary and a degraded store serve base
  without evaluating triggers (reasons `off`, `canary`, `degraded`); the tier state is
  neither read into the decision nor written.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from orca_cli.config.schema import Config, RouterConfig
from orca_cli.immutable import immutable
from orca_cli.routing.attempts import (
    MAX_FALLBACK_MODELS,
    build_attempts,
    provider_refusal,
    rank_by_mode,
)
from orca_cli.routing.auto.request import AutoRequest
from orca_cli.routing.candidates import (
    Api,
    Candidate,
    Healthy,
    Sourcing,
    all_healthy,
    build_candidates,
    check_channel_pin,
    check_model_pin,
    model_config,
)
from orca_cli.routing.caps import (
    NO_IN_FLIGHT,
    CapsView,
    SessionInFlight,
    ShareView,
    effective_t2,
    in_canary,
    share_denied,
)
from orca_cli.routing.escalation import TierDecision, TurnSignals, resolve_tier
from orca_cli.routing.features import Difficulty, Scorer
from orca_cli.routing.modes import ChannelPolicy, model_pick_mode, ordering_mode, policy_for
from orca_cli.routing.route_types import Attempt, PinRead, RouteInput, RoutePlan
from orca_cli.routing.snapshot import Snapshot
from orca_cli.routing.strategies import STRATEGIES, Ranking, StrategySignals
from orca_cli.routing.strikes import error_signatures
from orca_cli.routing.target import Target
from orca_cli.routing.tiers import Tier, TierState
from orca_cli.types import MAPPING
from orca_cli.wire.transcript import opening_fingerprint

__all__ = ["MAX_FALLBACK_MODELS", "Attempt", "PinRead", "RouteInput", "RoutePlan",
           "caps_view", "overflow_refusal", "plan_route", "reachable_window", "reaches_blind",
           "vision_refusal"]



def _fresh_conversation(body: Mapping[str, Any]) -> bool:
    """No assistant message in the body (`messages`, or a Responses `input` list)."""
    items = body.get("messages", body.get("input"))
    if not isinstance(items, list):
        return True
    # From the end: a continuing conversation's latest assistant message is near it (a loop,
    # not `any` over a generator: it stops after a message or two).
    for m in reversed(items):
        if isinstance(m, MAPPING) and m.get("role") == "assistant":
            return False
    return True


def caps_view(cfg: Config, router: RouterConfig, snapshot: Snapshot,
              budget_denied: bool = False,
              in_flight: SessionInFlight = NO_IN_FLIGHT) -> CapsView:
    esc = router.escalation
    # By position, in field order: a class called with keywords builds a dict of them first.
    return CapsView(
        snapshot.share,  # share
        snapshot.workspace_share,  # workspace_share
        esc.share_cap,  # share_cap
        cfg.workspace.share_cap,  # workspace_cap
        esc.warmup_requests,  # warmup_requests
        snapshot.state_lost_at,  # state_lost_at
        True,  # enabled
        budget_denied,  # budget_denied
        True,  # strong_available
        in_flight,  # in_flight
    )


def _plain(tier: Tier, reason: str) -> TierDecision:
    """A decision that evaluates no trigger and writes no tier state."""
    # By position: tier, reason, trigger, intents, denied, evaluations, shadow, t2,
    # state_tier, evaluated.
    return TierDecision(tier, reason, "", (), "", {}, None, 0.0, tier, False)


def _window(cfg: Config, candidates: Sequence[Candidate]) -> float:
    """The cache window of the first usable candidate's first channel (the strong pin TTL)."""
    for c in candidates:
        if c.excluded is None and c.channels:
            ch = cfg.channel(c.channels[0].channel)
            if ch is not None:
                return float(ch.cache_ttl_s)
    return 300.0


@immutable
class _Ctx:
    """What every step of one decision reads."""

    cfg: Config
    inp: RouteInput
    snapshot: Snapshot
    scorer: Scorer
    healthy: Healthy
    rng: random.Random
    policy: ChannelPolicy | None = None  # SPEC §20: provider lists, order, measured figures


def plan_route(
    cfg: Config,
    inp: RouteInput,
    snapshot: Snapshot,
    *,
    now: float,
    scorer: Scorer,
    rng: random.Random,
    healthy: Healthy = all_healthy,
) -> RoutePlan:
    """Decide tier, model, channel and key order for one request (SPEC §3 steps 3-6).

    `rng` is required: the core draws from the caller's generator only (seeded in tests,
    replay and `explain`), never from one of its own."""
    t = inp.target
    router = cfg.routers[t.router] if t.router is not None else None
    mode = ordering_mode(t, inp.prefs, router.mode if router is not None else "balanced")
    c = _Ctx(cfg, inp, snapshot, scorer, healthy, rng,
             policy_for(router, inp.prefs, inp.measured, mode, cfg))
    if router is None:
        return _plan_model(c)
    esc = router.escalation
    how = Sourcing(mode, healthy, c.rng, t.channel, c.policy)
    tiers = cfg.compiled.pools[router.name]  # the router's tiers, built once per config
    est = _fitting_estimate(inp.est_tokens, tiers.allowed, cfg)
    escalates = bool(tiers.strong) and esc.mode != "off"
    strong = (build_candidates(tiers.strong, inp.api, est, cfg, how, inp.images) if escalates
              else ())
    caps = caps_view(cfg, router, snapshot, inp.budget_denied, inp.in_flight)
    evidence: dict[str, Any] = {}
    if mode != router.mode or inp.prefs is not None:  # SPEC §20: what the request asked
        evidence["mode"] = mode
    state: TierState | None = None
    decision = _plain_reason(c, router, escalates)
    if decision is None:
        state = TierState.from_doc(snapshot.tier)
        decision = _resolve(c, router, state, caps, strong, evidence, now)
    base_models = tiers.base if escalates else tiers.allowed
    candidates = (strong if decision.tier == "strong"
                  else build_candidates(base_models, inp.api, est, cfg, how, inp.images))
    return _select(c, router, decision, candidates, caps, evidence, state)


def _plain_reason(c: _Ctx, router: RouterConfig, escalates: bool) -> TierDecision | None:
    """Base without evaluating any trigger, or None when the triggers decide."""
    inp = c.inp
    if inp.side:
        return _plain("base", "side")
    if inp.session is None:
        return _plain("base", "no_session")
    if not escalates:
        return _plain("base", "off")
    if inp.degraded:
        return _plain("base", "degraded")
    if not in_canary(router.name, inp.session, router.escalation.canary):
        return _plain("base", "canary")
    return None


def _resolve(c: _Ctx, router: RouterConfig, state: TierState | None, caps: CapsView,
             strong: Sequence[Candidate], evidence: dict[str, Any], now: float) -> TierDecision:
    """The triggers, caps and tier state of SPEC §6 over this turn's signals."""
    inp, esc = c.inp, router.escalation
    texts: dict[str, str] = {}
    signatures = error_signatures(inp.delta.strike_texts, texts)
    evidence["signatures"] = len(signatures)
    # A Responses request continuing by `previous_response_id` carries no assistant message,
    # yet it continues its conversation: it is no side request, and its user turn counts. So
    # does a conversation an agent compacted, whose summary stands for its earlier answers.
    fresh = (_fresh_conversation(inp.body) and not inp.previous_response
             and not inp.delta.compacted)
    # Which conversation: read only where a strong session's sub-agent rule can use it.
    named = (state is not None and state.tier == "strong"
             and ((fresh and state.history) or bool(state.conversations)))
    # By position, in field order: a class called with keywords builds a dict of them first.
    sig = TurnSignals(inp.dedupe_key,  # dedupe_key
                      inp.delta.score,  # delta_score
                      inp.delta.is_user_turn,  # user_turn
                      signatures,  # signatures
                      # signature_texts
                      tuple([texts[s] for s in signatures]) if signatures else (),
                      inp.ask,  # ask
                      "client",  # actor
                      fresh,  # fresh
                      opening_fingerprint(inp.body, inp.api) if named else "")  # conversation
    t2 = effective_t2(threshold=esc.threshold, t2=esc.t2, t1=esc.t1,
                      percentile=esc.percentile, samples=c.snapshot.percentile_samples)
    for x in strong:
        if x.excluded is None:
            break
    else:  # no strong candidate can serve the request
        caps = replace(caps, strong_available=False)
    return resolve_tier(state, sig, caps, esc, now=now, t2=t2,
                        strong_window_s=_window(c.cfg, strong))


def _select(c: _Ctx, router: RouterConfig, decision: TierDecision,
            candidates: tuple[Candidate, ...], caps: CapsView, evidence: dict[str, Any],
            state: TierState | None) -> RoutePlan:
    """Step 6: the pin within the tier, else the strategy; then the attempt order."""
    inp, tier = c.inp, decision.tier
    # The first usable candidate, by a loop (a list comprehension is a call on CPython 3.11)
    first_usable: Candidate | None = None
    for x in candidates:
        if x.excluded is None:
            first_usable = x
            break
    if first_usable is None:
        why = "; ".join(f"{x.model}: {x.reason}" for x in candidates) or "the pool is empty"
        refusal = (overflow_refusal(candidates, inp.est_tokens, inp.api, c.cfg)
                   or vision_refusal(candidates) or provider_refusal(candidates)
                   or (503, "no_candidate", f"no model of router {router.name!r} can serve "
                       f"this request in the {tier} tier ({why})"))
        return RoutePlan(router, decision, candidates, (), caps=caps,
                         refusal=refusal, evidence=evidence, tier_state=state)
    pins: list[PinRead] = []
    record = c.snapshot.affinity if inp.previous_response else None
    if record is not None and isinstance(record.get("model"), str):
        return _stored_response(c, router, decision, candidates, caps, evidence, state)
    if inp.previous_response:
        # Unknown id (made before orca saw it, or its record expired): routed as usual, and
        # the upstream decides whether it knows the response.
        evidence["previous_response"] = "unknown"
    model = _pinned_model(c, tier, candidates, pins)
    ranking: Ranking | None = None
    full: Difficulty | None = None
    full_skipped: str | None = "pinned"
    if model is None:
        ranking, full, full_skipped = _choose(c, router, candidates)
        if not ranking.ordered and router.strategy == "auto":
            return RoutePlan(router, decision, candidates, (), ranking=ranking, caps=caps,
                             refusal=(503, "no_candidate", f"no model of router {router.name!r} "
                                      "is eligible under [auto] (patterns, price caps)"),
                             evidence=evidence, tier_state=state)
        model = ranking.ordered[0] if ranking.ordered else first_usable.model
    elif router.strategy == "auto" and c.cfg.auto.fallbacks:
        # The pinned turn keeps its model; the ranking is only its fallback order.
        ranking = _rank(c, router, candidates, None)
        ranking = replace(ranking, note=ranking.note + "; pinned: fallback order only")
    first = _respected(c, candidates, model, _first_channel(c, tier, model, pins), pins)
    fallbacks = inp.route_fallbacks or router.fallbacks  # a route target's own first (§17)
    if router.strategy == "auto" and not inp.route_fallbacks:
        # SPEC §16: the ranked list is the fallback order
        fallbacks = ranking.ordered if ranking is not None and c.cfg.auto.fallbacks else ()
    attempts = build_attempts(model, candidates, first, fallbacks, inp.target.channel is None,
                              inp.prefs)
    # By position, in field order (the request path's plan): refusal None, not counted as
    # strong in the workspace.
    return RoutePlan(router, decision, candidates, attempts, tuple(pins), ranking, full,
                     full_skipped, caps, None, False, evidence, state)


def _choose(c: _Ctx, router: RouterConfig, candidates: Sequence[Candidate]
            ) -> tuple[Ranking, Difficulty | None, str | None]:
    """(ranking, full score, why it was skipped) of a turn without a usable model pin. A
    request's `:cheap` / `:fast` / `:nitro` (or `routing.mode`) picks among the tier's
    usable models by that mode instead of the strategy; on the auto router, among the ones
    its policy left eligible (SPEC §20). The tier and the caps were settled before."""
    inp = c.inp
    pick = model_pick_mode(inp.target, inp.prefs)
    if pick is not None and router.strategy != "auto":
        return rank_by_mode(candidates, pick, c.cfg, inp.measured), None, "mode"
    full: Difficulty | None = None
    if router.strategy in ("gated_adaptive", "auto"):
        full = inp.full if inp.full is not None else c.scorer.full(inp.body, inp.api)
    ranking = _rank(c, router, candidates, full)
    if pick is not None:
        by_mode = rank_by_mode(candidates, pick, c.cfg, inp.measured, among=ranking.ordered)
        ranking = replace(ranking, ordered=by_mode.ordered,
                          note=f"{ranking.note}; {by_mode.note}")
    return ranking, full, None if full is not None else "strategy"


def _rank(c: _Ctx, router: RouterConfig, candidates: Sequence[Candidate],
          full: Difficulty | None) -> Ranking:
    inp = c.inp
    request = None
    if router.strategy == "auto":
        request = AutoRequest(inp.body, inp.delta, full, inp.classification,
                              inp.latency_ms or _measured_latency(candidates, inp))
    banding = (c.scorer.banding(inp.body, inp.api).score
               if router.strategy == "gated_adaptive" else None)
    signals = StrategySignals(full.score if full else None, inp.delta.difficulty.values,
                              banding_score=banding, request=request)
    ranking = STRATEGIES[router.strategy](candidates, c.cfg, router, signals,
                                          c.snapshot.linucb, c.rng)
    return native_first(ranking, candidates, c.cfg, inp.api)


def _measured_latency(candidates: Sequence[Candidate], inp: RouteInput) -> dict[str, float]:
    """The auto router's latency factor (SPEC §16) per channel, from the sidecar's measured
    first-byte EWMA of each candidate's first channel for that model (SPEC §20)."""
    out: dict[str, float] = {}
    for x in candidates:
        m = inp.measured.get((x.channels[0].channel, x.model)) if x.channels else None
        if m is not None and m.latency_ms > 0:
            out[x.channels[0].channel] = m.latency_ms
    return out


def native_first(ranking: Ranking, candidates: Sequence[Candidate], cfg: Config,
                 api: Api) -> Ranking:
    """Among models the strategy ranked equal (adjacent, same score), one whose first channel
    speaks the inbound format goes first: it costs no translation (SPEC §13.2). Nothing else
    moves, so the tier, the caps and the strategy's order stand."""
    native = set()
    for cand in candidates:
        ch = cfg.channel(cand.channels[0].channel) if cand.channels else None
        if ch is not None and ch.accepts(api):
            native.add(cand.model)
    ordered = ranking.ordered
    if len(ordered) < 2 or all(m in native for m in ordered):
        return ranking
    out: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        score = ranking.scores.get(ordered[i])
        while (score is not None and j + 1 < len(ordered)
               and ranking.scores.get(ordered[j + 1]) == score):
            j += 1
        run = ordered[i:j + 1]
        out += sorted(run, key=lambda m: m not in native)  # stable: native first
        i = j + 1
    return ranking if tuple(out) == ordered else replace(ranking, ordered=tuple(out))


STORED_RESPONSE_MESSAGE = (
    "previous_response_id names a response stored at one provider account ({why}); orca "
    "cannot move it to another upstream. Send the full input with store: false instead "
    "(what Codex CLI does by default), or retry once that upstream is back.")


def _stored_response(c: _Ctx, router: RouterConfig, decision: TierDecision,
                     candidates: tuple[Candidate, ...], caps: CapsView,
                     evidence: dict[str, Any], state: TierState | None) -> RoutePlan:
    """The one attempt a stored response allows: the channel, key and model that made it;
    a 400 when that upstream cannot serve it now."""
    record = c.snapshot.affinity
    assert record is not None
    model = str(record["model"])
    pin = PinRead("affinity", decision.tier, dict(record), "hit", "previous_response")
    ok, _keep, why = check_channel_pin(record, model, c.cfg, c.healthy, c.inp.api)
    if ok and not any(x.model == model and x.excluded is None for x in candidates):
        ok, why = False, f"its model {model} is not in the {decision.tier} tier now"
    if not ok:
        return RoutePlan(router, decision, candidates, (), (replace(pin, status="dropped",
                                                                    reason=why),),
                         caps=caps, evidence=evidence, tier_state=state,
                         refusal=(400, "previous_response_not_found",
                                  STORED_RESPONSE_MESSAGE.format(why=why)))
    att = Attempt(model, str(record["channel"]), int(record["key_index"]), "pin")
    return RoutePlan(router, decision, candidates, (att,), (pin,), caps=caps,
                     full_skipped="pinned", evidence=evidence, tier_state=state)


def _pinned_model(c: _Ctx, tier: Tier, candidates: Sequence[Candidate],
                  pins: list[PinRead]) -> str | None:
    """The session's model pin of this tier, when it is still a usable candidate."""
    if c.inp.session is None:
        return None
    pinned = c.snapshot.pins.get(tier)
    ok, why = check_model_pin(pinned, candidates)
    if ok:
        pins.append(PinRead("model", tier, pinned, "hit", "ok"))
        return pinned
    status: Literal["miss", "dropped"] = "miss" if pinned is None else "dropped"
    pins.append(PinRead("model", tier, pinned, status, why))
    return None


def _respected(c: _Ctx, candidates: Sequence[Candidate], model: str,
               first: tuple[str, int, str] | None,
               pins: list[PinRead]) -> tuple[str, int, str] | None:
    """A pinned channel the provider preferences rule out (SPEC §20) is skipped, not dropped:
    one the router's or the request's lists leave out, or not the first of `provider.order`."""
    policy = c.policy
    if first is None or policy is None or not (policy.narrows or policy.order):
        return first
    cand = next((x for x in candidates if x.model == model), None)
    names = [ch.channel for ch in cand.channels] if cand is not None else []
    if first[0] in names and (not policy.order or names[0] == first[0]):
        return first
    if pins:
        pins[-1] = replace(pins[-1], status="skipped", reason="provider_preferences")
    return None


def _first_channel(c: _Ctx, tier: Tier, model: str,
                   pins: list[PinRead]) -> tuple[str, int, str] | None:
    """(channel, key_index, source) to try first: the session's channel pin, else the
    sessionless prefix's affinity (SPEC §5)."""
    snapshot, cfg = c.snapshot, c.cfg
    if c.inp.session is not None:
        raw = snapshot.channel_pins.get(tier)
        ok, keep, why = check_channel_pin(raw, model, cfg, c.healthy, c.inp.api)
        value = dict(raw) if raw is not None else None
        if ok and raw is not None:
            pins.append(PinRead("channel", tier, value, "hit", "ok"))
            return str(raw["channel"]), int(raw["key_index"]), "pin"
        pins.append(PinRead("channel", tier, value,
                            "miss" if raw is None or keep else "dropped", why))
        return None
    if snapshot.affinity is None:
        return None
    ok, _keep, why = check_channel_pin(snapshot.affinity, model, cfg, c.healthy, c.inp.api)
    pins.append(PinRead("affinity", tier, dict(snapshot.affinity),
                        "hit" if ok else "skipped", why))
    if ok:
        return str(snapshot.affinity["channel"]), int(snapshot.affinity["key_index"]), "affinity"
    return None


# A body's bytes per token, at most, in what agents send (prose, code, JSON with its keys and
# escapes): a real tokenizer reads English at about 4-5 bytes a token and escaped non-ASCII
# text at about 6; the request's estimate (`wire.estimate`) counts 4, an upper bound.
MAX_BYTES_PER_TOKEN = 6


def reachable_window(cfg: Config, target: Target, route_fallbacks: Sequence[str] = ()) -> int:
    """The smallest context window among the models a request to `target` can be sent to:
    a router's allowed models, else the concrete model and a route's fallbacks, the models
    `plan_route` builds candidates from. A body whose bytes / 4 fit it fits every one of
    them, so its estimate is not scanned for inline media (SPEC §14.3): the decision's cost
    stays flat in the transcript's length wherever the models' windows hold the body."""
    if target.router is not None:
        return cfg.compiled.pools[target.router].smallest_window
    if target.model is None:
        return cfg.compiled.smallest_window
    window = model_config(target.model, cfg).context_window
    for m in route_fallbacks:
        window = min(window, model_config(m, cfg).context_window)
    return window


def _fitting_estimate(est: int, models: Iterable[str], cfg: Config) -> int:
    """The estimate candidates are excluded on (SPEC §14.3). The upper one (`est`, a token
    per 4 bytes) keeps a request off a model it may not fit while a larger one can take it;
    when it fits none of `models` but the lower bound (a token per `MAX_BYTES_PER_TOKEN`
    bytes) fits one, the lower bound decides: orca refuses only what no candidate could
    take, and a provider that cannot take it answers its own overflow error."""
    if est <= cfg.compiled.smallest_window:  # the common case: fits every window
        return est
    largest = max((model_config(m, cfg).context_window for m in models), default=0)
    if est <= largest:
        return est
    lower = est * 4 // MAX_BYTES_PER_TOKEN
    return lower if lower <= largest else est


def overflow_refusal(candidates: Sequence[Candidate], est_tokens: int, api: str,
                     cfg: Config) -> tuple[int, str, str] | None:
    """Longer than every candidate's context window (SPEC §14.3): the inbound provider's own
    400, so the agent runs its compaction — never a 503 that it would retry as is. The
    estimate is the one candidates are excluded on (a token per four body bytes). A model
    left out because the request carries an image it cannot read (`vision`) is no candidate
    here: when every model that reads it is too small, the request is too long."""
    fitting = [c for c in candidates if c.excluded != "vision"]
    if not fitting or any(c.excluded != "context_window" for c in fitting):
        return None
    largest = max(model_config(c.model, cfg).context_window for c in fitting)
    if api == "anthropic":
        return 400, "invalid_request_error", (f"prompt is too long: {est_tokens} tokens > "
                                              f"{largest} maximum")
    return 400, "context_length_exceeded", (
        f"This model's maximum context length is {largest} tokens. However, your messages "
        f"resulted in {est_tokens} tokens. Please reduce the length of the messages.")


def vision_refusal(candidates: Sequence[Candidate]) -> tuple[int, str, str] | None:
    """The request carries an image or a PDF and no candidate reads one (`vision = false` on
    each): a 400 in the inbound shape before any upstream call (SPEC §13.2's rule for what
    no candidate can take), naming the models — never a 503 the agent would retry as is."""
    if not candidates or any(c.excluded != "vision" for c in candidates):
        return None
    names = ", ".join(dict.fromkeys(c.model for c in candidates))
    return 400, "image_not_supported", (
        f"the request carries an image or a PDF and no model it can be served by reads them "
        f"({names}: vision = false); give the router a model that does")


def reaches_blind(cfg: Config, target: Target, route_fallbacks: Sequence[str] = ()) -> bool:
    """Whether a model that reads no images is among those a request to `target` can be sent
    to: only then is the request looked at for images (`wire.estimate.needs_vision`)."""
    blind = cfg.compiled.blind_models
    if not blind:
        return False
    if target.router is not None:
        return cfg.compiled.pools[target.router].blind
    if target.model is None:
        return True
    return target.model in blind or any(m in blind for m in route_fallbacks)


def _plan_model(c: _Ctx) -> RoutePlan:
    """A concrete model: only its own channels and keys; the workspace cap still binds."""
    cfg, inp, snapshot, healthy = c.cfg, c.inp, c.snapshot, c.healthy
    t = inp.target
    assert t.model is not None
    counts_strong = t.model in cfg.strong_models()
    mode = ordering_mode(t, inp.prefs, "balanced")
    how = Sourcing(mode, healthy, c.rng, t.channel, c.policy)
    est = _fitting_estimate(inp.est_tokens, (t.model, *inp.route_fallbacks), cfg)
    candidates = build_candidates([t.model], inp.api, est, cfg, how, inp.images)
    if inp.route_fallbacks:  # each on its own channels: re-selected in full (SPEC §17)
        candidates += build_candidates([m for m in inp.route_fallbacks if m != t.model],
                                       inp.api, est, cfg, replace(how, channel=None),
                                       inp.images)
    tier: Tier = "strong" if counts_strong else "base"
    caps = CapsView(share=ShareView(), workspace_share=snapshot.workspace_share,
                    workspace_cap=cfg.workspace.share_cap)
    if counts_strong and inp.budget_denied:
        decision = TierDecision(tier="base", reason="denied:budget", denied="budget",
                                evaluated=False)
        return RoutePlan(None, decision, candidates, (), caps=caps, refusal=(
            429, "budget", f"model {t.model!r} is a frontier model and a budget is at 80 % "
            "or more of its limit (see `orca budget`); use a router or a base-tier model"))
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
        refusal = overflow_refusal(candidates, inp.est_tokens, inp.api, cfg) or \
            vision_refusal(candidates) or provider_refusal(candidates) or (
                503, "no_candidate", f"model {t.model!r} cannot be served: {why}")
        return RoutePlan(None, decision, candidates, (), caps=caps, refusal=refusal,
                         counts_strong_in_workspace=counts_strong)
    # SPEC §1.3, §5: the session's channel pin (else the prefix's affinity), the same soft
    # pin a router's tier consults; the tier is the model's own, and there is no model pin.
    pins: list[PinRead] = []
    first = _first_channel(c, tier, t.model, pins)
    if first is not None and t.channel is not None and first[0] != t.channel:
        # `channel:model` serves on that channel alone; the pin is another request's to use.
        pins[-1] = replace(pins[-1], status="skipped", reason="qualified_channel")
        first = None
    first = _respected(c, candidates, t.model, first, pins)
    attempts = build_attempts(t.model, candidates, first, inp.route_fallbacks,
                              bool(inp.route_fallbacks), inp.prefs)
    return RoutePlan(None, decision, candidates, attempts, tuple(pins), caps=caps,
                     full_skipped="concrete_model", counts_strong_in_workspace=counts_strong)
