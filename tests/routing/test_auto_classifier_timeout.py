"""SPEC §16: a stalled, failing or invalid model classifier falls back to the local one within
its timeout, and the ranking still comes out."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import time
from collections.abc import Mapping
from typing import Any

from orca_cli.config.auto import AutoConfig
from orca_cli.config.schema import RouterConfig
from orca_cli.proxy.auto_classifier import classify_for_auto
from orca_cli.routing.auto.classify import Classification
from orca_cli.routing.auto.request import AutoRequest
from orca_cli.routing.candidates import build_candidates
from orca_cli.routing.features import Scorer
from orca_cli.routing.strategies import STRATEGIES, StrategySignals
from tests.routing.cfg import channel, config, price

BODY = {"model": "orca/auto", "messages": [{"role": "user", "content": "Summarize: we met."}]}
DELTA = Scorer().delta(BODY, "openai")
AUTO = AutoConfig(enabled=True, classifier="lo", classifier_timeout_ms=50)


class Fake:
    def __init__(self, answer: str = "", *, stall: bool = False, fail: bool = False) -> None:
        self.answer, self.stall, self.fail = answer, stall, fail
        self.calls: list[tuple[Mapping[str, Any], str, str]] = []

    async def complete(self, request: Mapping[str, Any], *, parent_request_id: str,
                       purpose: str) -> str:
        self.calls.append((request, parent_request_id, purpose))
        if self.stall:
            await asyncio.Event().wait()  # never answers
        if self.fail:
            raise ConnectionError("refused")
        return self.answer


async def _classify(fake: Fake | None, auto: AutoConfig = AUTO) -> Classification | None:
    return await classify_for_auto(fake, auto, BODY, DELTA, parent_request_id="req_parent")


async def test_a_stalled_classifier_falls_back_within_its_timeout() -> None:
    start = time.perf_counter()
    cls = await _classify(Fake(stall=True))
    assert time.perf_counter() - start < 1.0  # 50 ms budget, generous bound for a busy box
    assert cls is not None and cls.fallback_reason == "timeout"
    ranking = _rank(cls)
    assert ranking.ordered and ranking.explain is not None
    assert ranking.explain["classifier"] == "local"
    assert ranking.explain["fallback_reason"] == "timeout"
    assert ranking.explain["workloads"] == ["summary"]


async def test_errors_and_invalid_answers_fall_back() -> None:
    failed = await _classify(Fake(fail=True))
    invalid = await _classify(Fake('{"model": "big"}'))
    assert failed is not None and failed.fallback_reason == "error: ConnectionError"
    assert invalid is not None and (invalid.fallback_reason or "").startswith("invalid_output")


async def test_a_valid_answer_is_used_and_the_child_request_is_labelled() -> None:
    fake = Fake(json.dumps({"workloads": ["code"], "complexity": 0.3, "confidence": 0.9}))
    cls = await _classify(fake)
    assert cls is not None and cls.workloads == ("code",) and cls.source == "model:lo"
    (request, parent, purpose), = fake.calls
    assert (request["model"], parent, purpose) == ("lo", "req_parent", "auto_routing_classifier")


async def test_local_needs_no_call() -> None:
    fake = Fake(stall=True)
    assert await _classify(fake, dataclasses.replace(AUTO, classifier="local")) is None
    assert not fake.calls


def _rank(cls: Classification) -> Any:
    cfg = config([channel("a", ["lo", "hi"])],
                 models={"lo": price(0.1, 0.1, quality=0.6), "hi": price(5, 5, quality=0.9)})
    cfg = dataclasses.replace(cfg, auto=AUTO)
    req = AutoRequest(BODY, DELTA, None, cls)
    return STRATEGIES["auto"](build_candidates(["lo", "hi"], "openai", 10, cfg), cfg,
                              RouterConfig("auto", strategy="auto", allowed_models=("lo", "hi")),
                              StrategySignals(None, (0.0,) * 6, request=req), {},
                              random.Random(0))
