"""The model classifier's pure half (SPEC §16): the child request, its strict output schema,
the strict parser of the answer, and the fallback to the local classifier.

The request path (not this package: it does I/O) runs it:

    req = classifier_request(cfg.auto.classifier, body, delta)
    try:
        text = await within(cfg.auto.classifier_timeout_ms / 1000,
                            classifier.complete(req, parent_request_id=rid, purpose=PURPOSE))
        cls = from_model_answer(text, cfg.auto.classifier, body)
    except TimeoutError:
        cls = fallback("timeout")
    except Exception:
        cls = fallback("error")        # never fails the generation
    RouteInput(..., classification=cls)

`from_model_answer` never raises: invalid output is `fallback("invalid_output: <why>")`.
A `fallback(...)` classification has no workloads; the auto strategy replaces it by the local
classifier's answer (over the same features it would have used anyway) keeping the reason,
so `explain` shows which classifier answered and why the model one did not. The classifier
only classifies: it never names a model.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Protocol

from orca_cli.config.auto import WORKLOADS
from orca_cli.routing.auto.classify import Classification, hard_facts
from orca_cli.routing.features import Delta

__all__ = [
    "ASK_CHARS",
    "MAX_WORKLOADS",
    "OUTPUT_SCHEMA",
    "PURPOSE",
    "ClassifierOutputError",
    "ModelClassifier",
    "classifier_request",
    "fallback",
    "from_model_answer",
    "parse_answer",
]

PURPOSE = "auto_routing_classifier"
ASK_CHARS = 4_000  # the head of the latest ask the classifier sees
MAX_WORKLOADS = 3
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["workloads", "complexity", "confidence"],
    "properties": {
        "workloads": {"type": "array", "minItems": 1, "maxItems": MAX_WORKLOADS,
                      "items": {"type": "string", "enum": list(WORKLOADS)}},
        "complexity": {"type": "number", "minimum": 0, "maximum": 1},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
}
_INSTRUCTIONS = (
    "You classify one request to a language model. Do not answer it. Reply with one JSON "
    "object and nothing else: {\"workloads\": [1-3 of " + ", ".join(WORKLOADS) + ", strongest "
    "first], \"complexity\": the minimum model capability in [0, 1] likely to give an "
    "acceptable, reliable answer, \"confidence\": your confidence in [0, 1]}. The metadata "
    "lists facts of the request that are certain."
)


class ClassifierOutputError(ValueError):
    """The model classifier's answer is not exactly the schema's object."""


class ModelClassifier(Protocol):
    """Sends the classifier's child request through orca (its own request id and trace,
    `purpose` and the parent's id recorded, billed and counted like any request) and returns
    the assistant's text. Raises on any failure; the caller bounds it with the timeout."""

    async def complete(self, request: Mapping[str, Any], *, parent_request_id: str,
                       purpose: str) -> str: ...


def classifier_request(model: str, body: Mapping[str, Any], delta: Delta) -> dict[str, Any]:
    """The child request (OpenAI Chat Completions shape) for the classifier model."""
    tools, structured = hard_facts(body)
    ask = delta.user_texts[-1][:ASK_CHARS] if delta.user_texts else ""
    meta = {"defines_tools": tools, "structured_output": structured,
            "tool_results_only": delta.is_tool_continuation,
            "estimated_tokens": delta.difficulty.tokens}
    return {
        "model": model,
        "temperature": 0,
        "max_tokens": 120,
        "stream": False,
        "response_format": {"type": "json_schema", "json_schema": {
            "name": PURPOSE, "strict": True, "schema": OUTPUT_SCHEMA}},
        "messages": [
            {"role": "system", "content": _INSTRUCTIONS},
            {"role": "user", "content": "metadata: " + json.dumps(meta, sort_keys=True)
             + "\nrequest:\n" + ask},
        ],
    }


def _unit(doc: Mapping[str, Any], key: str) -> float:
    value = doc[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ClassifierOutputError(f"{key} must be a number, got {type(value).__name__}")
    if not (math.isfinite(value) and 0 <= value <= 1):
        raise ClassifierOutputError(f"{key} must be in [0, 1], got {value}")
    return float(value)


def parse_answer(text: str) -> tuple[tuple[str, ...], float, float]:
    """(workloads, complexity, confidence) from exactly the schema's object, else raises."""
    try:
        doc = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise ClassifierOutputError(f"not JSON ({exc.__class__.__name__})") from None
    if not isinstance(doc, dict):
        raise ClassifierOutputError("not a JSON object")
    keys = set(doc)
    if keys != {"workloads", "complexity", "confidence"}:
        extra, missing = sorted(keys - set(OUTPUT_SCHEMA["required"])), sorted(
            set(OUTPUT_SCHEMA["required"]) - keys)
        raise ClassifierOutputError(f"keys: missing {missing}, unexpected {extra}")
    workloads = doc["workloads"]
    if not isinstance(workloads, list) or not 1 <= len(workloads) <= MAX_WORKLOADS:
        raise ClassifierOutputError(f"workloads must be a list of 1 to {MAX_WORKLOADS} names")
    for w in workloads:
        if w not in WORKLOADS:
            raise ClassifierOutputError(f"unknown workload {str(w)[:40]!r}")
    if len(set(workloads)) != len(workloads):
        raise ClassifierOutputError("workloads repeat")
    return tuple(workloads), _unit(doc, "complexity"), _unit(doc, "confidence")


def fallback(reason: str) -> Classification:
    """The marker the auto strategy replaces by the local classifier, keeping `reason`."""
    return Classification((), 0.0, 0.0, source="local", fallback_reason=reason)


def from_model_answer(text: str, model: str, body: Mapping[str, Any]) -> Classification:
    """The model's classification with the request's hard facts added (they are certain);
    `fallback("invalid_output: ...")` when the answer breaks the schema. Never raises."""
    try:
        workloads, complexity, confidence = parse_answer(text)
    except ClassifierOutputError as exc:
        return fallback(f"invalid_output: {exc}")
    tools, structured = hard_facts(body)
    certain = [w for w, on in (("structured_output", structured), ("tool_use", tools)) if on]
    merged = tuple(dict.fromkeys([*workloads, *certain]))
    return Classification(merged, complexity, confidence, source=f"model:{model}")
