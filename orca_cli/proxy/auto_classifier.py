"""Run the auto router's model classifier with its timeout (SPEC §16): the I/O half of
`routing.auto.model_classifier`.

`classify_for_auto` returns None for `classifier = "local"` (the strategy classifies
locally), the model's classification when it answers in time with a valid object, and a
fallback marker (`timeout`, `error: <type>`, `invalid_output: <why>`) otherwise — the auto
strategy then uses the local classifier and the trace says why. It never raises, except a
cancellation of the caller itself, so the generation never fails because of the classifier.
Whatever the outcome, a classifier that made a child request names it (`request_id`), and
the classification carries that id into the parent's trace (`auto.classifier_request_id`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from orca_cli.config.auto import AutoConfig
from orca_cli.routing.auto.classify import Classification
from orca_cli.routing.auto.model_classifier import (
    PURPOSE,
    ModelClassifier,
    classifier_request,
    fallback,
    from_model_answer,
)
from orca_cli.routing.features import Delta

__all__ = ["classify_for_auto"]


async def classify_for_auto(classifier: ModelClassifier | None, auto: AutoConfig,
                            body: Mapping[str, Any], delta: Delta, *,
                            parent_request_id: str) -> Classification | None:
    """The classification to put in `RouteInput.classification` (see the module docstring)."""
    if auto.classifier == "local":
        return None
    if classifier is None:
        return fallback("error: no model classifier is wired")
    request = classifier_request(auto.classifier, body, delta)
    try:
        async with asyncio.timeout(auto.classifier_timeout_ms / 1000):
            text = await classifier.complete(request, parent_request_id=parent_request_id,
                                             purpose=PURPOSE)
    except TimeoutError:
        found = fallback("timeout")
    except Exception as exc:  # noqa: BLE001 — any failure of the child request: local instead
        found = fallback(f"error: {type(exc).__name__}")
    else:
        found = from_model_answer(text, auto.classifier, body)
    # `proxy.child.ChildClassifier` names the child request it made; another classifier
    # (a test's) may make none.
    child_id = getattr(classifier, "request_id", None)
    return replace(found, request_id=child_id) if isinstance(child_id, str) else found
