"""The plan's data: one upstream `Attempt`, a `PinRead`, the `RouteInput` the decision reads
and the `RoutePlan` it returns (`routing.route.plan_route`). Pure data, shared by the proxy,
the replay and the trace."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any, Literal

from orca_cli.config.schema import RouterConfig
from orca_cli.immutable import immutable
from orca_cli.routing.auto.classify import Classification
from orca_cli.routing.candidates import Api, Candidate
from orca_cli.routing.caps import NO_IN_FLIGHT, CapsView, SessionInFlight
from orca_cli.routing.escalation import TierDecision
from orca_cli.routing.features import Delta, Difficulty
from orca_cli.routing.modes import NO_MEASURES, Measured, ProviderPrefs
from orca_cli.routing.strategies import Ranking
from orca_cli.routing.target import Target
from orca_cli.routing.tiers import Ask, Tier, TierState

__all__ = ["Attempt", "PinRead", "RouteInput", "RoutePlan"]


@immutable
class Attempt:
    """One upstream try: a model on one channel with one key."""

    model: str
    channel: str
    key_index: int
    source: Literal["pin", "affinity", "ranked", "fallback", "drained"]


@immutable
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


@immutable
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
    side: bool = False  # a side request (SPEC §14.1): base, no trigger evaluated, no writes
    # Responses `previous_response_id`: the snapshot's affinity is that response's record,
    # a hard pin to the channel, key and model that produced it (SPEC §13.1).
    previous_response: bool = False
    # The auto router (SPEC §16): a model classifier's answer (None: the local classifier)
    # and the channels' measured recent latency in ms.
    classification: Classification | None = None
    latency_ms: Mapping[str, float] = field(default_factory=dict)
    # SPEC §17: a `[budgets]` budget is at 80 % or more: the strong tier is denied.
    budget_denied: bool = False
    # SPEC §17: a route target's fallback models (replacing a router's `fallbacks`; after a
    # concrete model's own channels), each re-selected in full.
    route_fallbacks: tuple[str, ...] = ()
    # SPEC §20: the request's `provider` object and `routing.mode` (None: sent none), and
    # the sidecar's measured latency / throughput per (channel, model), read as they are
    # when the (synchronous) decision runs.
    prefs: ProviderPrefs | None = None
    measured: Measured = field(default_factory=lambda: NO_MEASURES)
    # This sidecar's transitions of the session decided and not yet committed (SPEC §6.4).
    in_flight: SessionInFlight = NO_IN_FLIGHT
    # The request carries an image or a PDF (looked for only where a model it can reach
    # reads none): models with `vision = false` are excluded (`vision`).
    images: bool = False


@immutable
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
