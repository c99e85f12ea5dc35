"""SPEC §16: the model classifier's child request, its strict parser, and the local fallback."""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

import pytest

from orca_cli.config.auto import AutoConfig
from orca_cli.config.schema import RouterConfig
from orca_cli.routing.auto.model_classifier import (
    OUTPUT_SCHEMA,
    PURPOSE,
    ClassifierOutputError,
    classifier_request,
    fallback,
    from_model_answer,
    parse_answer,
)
from orca_cli.routing.auto.request import AutoRequest
from orca_cli.routing.candidates import build_candidates
from orca_cli.routing.features import Scorer
from orca_cli.routing.strategies import STRATEGIES, StrategySignals
from tests.routing.cfg import channel, config, price

SCORER = Scorer()
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {}}}]


def _body(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "orca/auto", "messages": [{"role": "user", "content": text}], **extra}


def test_the_child_request_is_strict_and_carries_the_hard_facts() -> None:
    body = _body("Review this function " + "x" * 10_000, tools=TOOLS)
    req = classifier_request("cheap-model", body, SCORER.delta(body, "openai"))
    assert req["model"] == "cheap-model" and req["temperature"] == 0 and not req["stream"]
    fmt = req["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"] == OUTPUT_SCHEMA and fmt["json_schema"]["name"] == PURPOSE
    user = req["messages"][1]["content"]
    assert '"defines_tools": true' in user and len(user) < 4_300  # the ask is cut to its head


GOOD = {"workloads": ["code", "reasoning"], "complexity": 0.6, "confidence": 0.8}


def test_a_valid_answer_parses() -> None:
    assert parse_answer(json.dumps(GOOD)) == (("code", "reasoning"), 0.6, 0.8)


@pytest.mark.parametrize(("answer", "why"), [
    ("not json", "not JSON"),
    ("[1]", "not a JSON object"),
    (json.dumps({**GOOD, "model": "gpt-5"}), "unexpected ['model']"),
    (json.dumps({"workloads": ["code"], "complexity": 0.5}), "missing ['confidence']"),
    (json.dumps({**GOOD, "workloads": []}), "1 to 3"),
    (json.dumps({**GOOD, "workloads": ["code"] * 4}), "1 to 3"),
    (json.dumps({**GOOD, "workloads": ["poetry"]}), "unknown workload"),
    (json.dumps({**GOOD, "workloads": ["code", "code"]}), "repeat"),
    (json.dumps({**GOOD, "complexity": 1.5}), "complexity must be in [0, 1]"),
    (json.dumps({**GOOD, "confidence": True}), "confidence must be a number"),
    (json.dumps({**GOOD, "complexity": "0.5"}), "complexity must be a number"),
    ("```json\n" + json.dumps(GOOD) + "\n```", "not JSON"),
])
def test_anything_else_is_rejected(answer: str, why: str) -> None:
    with pytest.raises(ClassifierOutputError, match=why.replace("[", r"\[").replace("]", r"\]")):
        parse_answer(answer)
    reason = from_model_answer(answer, "m", _body("x")).fallback_reason
    assert reason is not None and reason.startswith("invalid_output: ")


def test_hard_facts_are_added_to_the_model_answer() -> None:
    cls = from_model_answer(json.dumps(GOOD), "m", _body("x", tools=TOOLS))
    assert cls.workloads == ("code", "reasoning", "tool_use") and cls.source == "model:m"


def _rank_with(classification: Any) -> Any:
    cfg = config([channel("a", ["lo", "hi"])],
                 models={"lo": price(0.1, 0.1, quality=0.5), "hi": price(5, 5, quality=0.95)})
    cfg = dataclasses.replace(cfg, auto=AutoConfig(enabled=True))
    body = _body("Translate to French: hello")
    req = AutoRequest(body, SCORER.delta(body, "openai"), None, classification)
    cands = build_candidates(["lo", "hi"], "openai", 10, cfg)
    router = RouterConfig("auto", strategy="auto", allowed_models=("lo", "hi"))
    signals = StrategySignals(None, (0.0,) * 6, request=req)
    return STRATEGIES["auto"](cands, cfg, router, signals, {},
                              random.Random(0))


def test_a_failed_model_classifier_falls_back_to_local_and_says_why() -> None:
    r = _rank_with(fallback("timeout"))
    assert r.explain["classifier"] == "local" and r.explain["fallback_reason"] == "timeout"
    assert r.explain["workloads"][0] == "translation"


def test_the_model_answer_is_used_when_valid() -> None:
    r = _rank_with(from_model_answer(json.dumps(
        {"workloads": ["reasoning"], "complexity": 0.7, "confidence": 0.9}), "m", {}))
    assert r.explain["classifier"] == "model:m" and r.ordered == ("hi",)
    assert {"model": "lo", "reason": "capability"} in r.explain["excluded"]
