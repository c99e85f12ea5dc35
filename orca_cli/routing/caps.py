"""Caps, canary and thresholds (SPEC §6.2, §6.4). Pure.

The share caps are evaluated at resolve on every request whose tier resolves strong. Unit:
billed-success requests; numerator served strong, denominator all of the router's (counted at
commit). Buckets are one hour; the window is the last `share_window_h` buckets including the
current one. A cap applies once the window holds ≥ `warmup_requests` requests; deny iff
strong / total > cap, both taken before this request. After a detected state loss the warm-up
is inverted: strong is denied until `warmup_requests` requests were counted since the loss
(the buckets restarted empty with the store, so the window's total is that count).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from orca_cli.immutable import immutable
from orca_cli.routing.features import round6
from orca_cli.routing.snapshot import ShareCounts

__all__ = [
    "NO_IN_FLIGHT",
    "PERCENTILE_MIN_SAMPLES",
    "PERCENTILE_SAMPLES",
    "CapsView",
    "SessionInFlight",
    "ShareView",
    "effective_t2",
    "in_canary",
    "share_denied",
    "window_hours",
]

PERCENTILE_MIN_SAMPLES = 200
PERCENTILE_SAMPLES = 1000


# The caps' view of a share window is the snapshot's counts themselves (one class).
ShareView = ShareCounts


@immutable
class SessionInFlight:
    """One session's transitions (once-boosts, an escalation to strong) that this sidecar has
    decided and not yet committed, and the escalation count its latest commit of the session
    stored (SPEC §6.4 under concurrency). Each of a burst of concurrent requests of a session
    reads the store before any of them commits: without this view every `once` of the burst
    would be served strong, while the stored count (checked again at commit) stays within
    the cap."""

    onces: int = 0
    escalating: bool = False  # an escalation to strong is in flight
    count_floor: int = 0  # a read older than this sidecar's latest commit still shows less

    @property
    def transitions(self) -> int:
        """What is in flight, as the count will see it: every once-boost, and racing
        escalations as one (the session goes strong once)."""
        return self.onces + self.escalating

    def session_count(self, stored: int, *, escalate: bool) -> int:
        """The escalation count a new transition is checked against: the stored one (or this
        sidecar's later commit's) plus what is in flight. An escalation joins one in flight."""
        return max(stored, self.count_floor) + self.onces + (self.escalating and not escalate)


NO_IN_FLIGHT = SessionInFlight()


@immutable
class CapsView:
    """What the caps need at resolve, read in the request's one store round trip."""

    share: ShareView = ShareView()
    workspace_share: ShareView = ShareView()
    share_cap: float = 0.20
    workspace_cap: float = 0.20
    warmup_requests: int = 20
    state_lost_at: float | None = None  # set after a detected state loss
    enabled: bool = True  # the replay turns share caps off for the report's figures
    budget_denied: bool = False  # SPEC §17: a [budgets] budget is at 80 % or more
    # The strong tier has a candidate that can serve the request (its format, its context):
    # when it has none, a strong ask is denied as `no_candidate`.
    strong_available: bool = True
    in_flight: SessionInFlight = NO_IN_FLIGHT

    def to_trace(self) -> dict[str, object]:
        return {
            "share": {"strong": self.share.strong, "total": self.share.total,
                      "ratio": round6(self.share.ratio), "cap": self.share_cap},
            "workspace_share": {"strong": self.workspace_share.strong,
                                "total": self.workspace_share.total,
                                "ratio": round6(self.workspace_share.ratio),
                                "cap": self.workspace_cap},
            "warmup": {"requests": self.warmup_requests,
                       "inverted": self.state_lost_at is not None},
            "enabled": self.enabled,
        }


def share_denied(share: ShareView, cap: float, warmup: int, *, after_loss: bool) -> bool:
    if share.total < warmup:
        return after_loss  # normal warm-up allows; after a state loss it denies
    if share.total <= 0:  # warmup_requests = 0 and nothing served yet: nothing to exceed
        return False
    return share.strong / share.total > cap


def window_hours(now: float, share_window_h: int) -> tuple[int, ...]:
    """The hour buckets of the share window, current one included."""
    current = int(now // 3600)
    return tuple(range(current - share_window_h + 1, current + 1))


def in_canary(router: str, session: str, canary: float) -> bool:
    """sha256(router + ":" + session) read as a fraction < canary (monotone in canary)."""
    if canary >= 1.0:
        return True
    if canary <= 0.0:
        return False
    digest = hashlib.sha256(f"{router}:{session}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < canary


def effective_t2(*, threshold: str, t2: float, t1: float, percentile: float,
                 samples: Sequence[float]) -> float:
    """The delta gate: absolute `t2`, or the `percentile` quantile of the router's recent
    user-turn delta scores once ≥ 200 exist, never below t1 + 0.05."""
    if threshold != "percentile" or len(samples) < PERCENTILE_MIN_SAMPLES:
        return t2
    ordered = sorted(samples)
    idx = min(len(ordered) - 1, max(0, round(percentile * (len(ordered) - 1))))
    return max(ordered[idx], t1 + 0.05)
