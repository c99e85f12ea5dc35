"""What routing reads from the state store for one request: the `Snapshot` (SPEC §9).

It lives on the routing side so imports point one way: the pure core defines what it needs,
and `state/` (the store backends) produces it. `orca_cli.state.base` re-exports these names.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import field
from typing import Any, TypeAlias

from orca_cli.immutable import immutable
from orca_cli.routing.routes.budget import Spend

__all__ = ["ShareCounts", "Snapshot", "TierDoc"]



class _Empty(Mapping[str, Any]):
    """The one shared empty mapping of a read without budgets (nothing built per read)."""

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    __hash__ = object.__hash__


_NONE: Mapping[str, Any] = _Empty()

TierDoc: TypeAlias = dict[str, Any]


@immutable
class ShareCounts:
    """Served-strong and total requests over a share window, as read. The caps take the
    read's value as it is (`caps.ShareView` is this class): nothing is copied per request."""

    strong: float = 0.0
    total: float = 0.0

    @property
    def ratio(self) -> float:
        return self.strong / self.total if self.total else 0.0


@immutable
class Snapshot:
    tier: TierDoc | None = None
    tier_version: int = 0
    pins: Mapping[str, str] = field(default_factory=dict)  # "base"/"strong" -> model
    channel_pins: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    share: ShareCounts = ShareCounts()
    workspace_share: ShareCounts = ShareCounts()
    affinity: Mapping[str, Any] | None = None
    linucb: Mapping[str, Sequence[float]] = field(default_factory=dict)
    percentile_samples: tuple[float, ...] = ()
    # Set when the store detected a state loss; the time it was detected (SPEC §6.4, §9).
    state_lost_at: float | None = None
    # SPEC §17: the budget counters and raised limits the read asked for (absent = none).
    budgets: Mapping[str, Spend] = _NONE
    budget_limits: Mapping[str, float] = _NONE
