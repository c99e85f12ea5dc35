"""What the auto strategy reads about one request (SPEC §16); built by `plan_route`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from orca_cli.immutable import immutable
from orca_cli.routing.auto.classify import Classification
from orca_cli.routing.features import Delta, Difficulty

__all__ = ["AutoRequest"]


@immutable
class AutoRequest:
    """The body (hard facts: tools, structured output), the §4 features already computed,
    and what the request path learned outside the pure core: a model classifier's answer
    (None: classify locally) and the channels' measured recent latency in ms."""

    body: Mapping[str, Any]
    delta: Delta
    full: Difficulty | None = None
    classification: Classification | None = None
    measured_latency_ms: Mapping[str, float] = field(default_factory=dict)
