"""SPEC §16: the `[auto]` table, `quality_by_workload`, and the implicit `auto` router."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from orca_cli.config import parse
from orca_cli.config.load import validate_doc
from orca_cli.routing.target import resolve_target

BASE: dict[str, Any] = {
    "channels": [
        {"name": "cheapco", "type": "sim", "models": ["tiny", "small"]},
        {"name": "bigco", "type": "sim", "models": ["large", "huge", "unpriced"]},
    ],
    "models": {
        "tiny": {"input": 0.05, "output": 0.20, "quality": 0.5},
        "small": {"input": 0.25, "output": 1.2, "quality": 0.65},
        "large": {"input": 0.9, "output": 4.0, "quality": 0.85},
        "huge": {"input": 5.0, "output": 25.0, "quality": 0.97},
    },
}


def _doc(**auto: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    doc["auto"] = auto
    return doc


def _errors(doc: dict[str, Any]) -> list[str]:
    _cfg, errors = validate_doc(doc, source="orca.toml", environ={})
    return [f"{e.key}: {e.why}" for e in errors]


def test_no_auto_table_no_auto_router() -> None:
    cfg = parse(copy.deepcopy(BASE), environ={})
    assert not cfg.auto.enabled and "auto" not in cfg.routers


def test_the_implicit_router_holds_every_priced_model_in_the_caps_and_patterns() -> None:
    cfg = parse(_doc(), environ={})
    r = cfg.routers["auto"]
    assert r.strategy == "auto" and r.session_aware
    assert r.allowed_models == ("tiny", "small", "large", "huge")  # never "unpriced"
    assert r.strong_pool == ("huge",) and r.escalation.mode == "auto"
    assert resolve_target("orca/auto", cfg).router == "auto"


@pytest.mark.parametrize(("auto", "allowed", "strong"), [
    ({"spend_profile": "economy"}, ("tiny",), ()),
    ({"spend_profile": "standard"}, ("tiny", "small"), ("small",)),
    ({"spend_profile": "premium"}, ("tiny", "small", "large"), ("large",)),
    ({"spend_profile": "premium", "max_output": 1.5}, ("tiny", "small"), ("small",)),
    ({"spend_profile": "economy", "capability_margin": 0.5}, ("tiny",), ()),
    ({"models": ["bigco/*"]}, ("large", "huge"), ("huge",)),
    ({"models": ["t*", "huge"]}, ("tiny", "huge"), ("huge",)),
    ({"capability_margin": 0.35}, ("tiny", "small", "large", "huge"),
     ("small", "large", "huge")),
    ({"capability_margin": 0.5}, ("tiny", "small", "large", "huge"), ()),  # no base left
])
def test_pools_follow_the_policy(auto: dict[str, Any], allowed: tuple[str, ...],
                                 strong: tuple[str, ...]) -> None:
    r = parse(_doc(**auto), environ={}).routers["auto"]
    assert (r.allowed_models, r.strong_pool) == (allowed, strong)
    assert r.escalation.mode == ("auto" if strong else "off")


def test_an_explicit_router_wins_and_enabled_false_removes_it() -> None:
    doc = _doc()
    doc["routers"] = {"auto": {"strategy": "auto", "allowed_models": ["tiny", "large"]}}
    assert parse(doc, environ={}).routers["auto"].allowed_models == ("tiny", "large")
    assert "auto" not in parse(_doc(enabled=False), environ={}).routers


def test_quality_by_workload_loads() -> None:
    doc = _doc()
    doc["models"]["small"]["quality_by_workload"] = {"code": 0.8, "summary": 0.7}
    cfg = parse(doc, environ={})
    assert cfg.models["small"].quality_by_workload == {"code": 0.8, "summary": 0.7}


@pytest.mark.parametrize(("auto", "error"), [
    ({"objective": "speed"}, 'auto.objective: must be one of "balanced", "quality", "cost", '
                             '"latency", got "speed"'),
    ({"spend_profile": "cheap"}, 'auto.spend_profile: must be one of "economy", "standard", '
                                 '"premium", "any", got "cheap"'),
    ({"max_input": -1}, "auto.max_input: must be >= 0 $ per 1M tokens (0 = the profile's cap), "
                        "got -1"),
    ({"classifier_timeout_ms": 0}, "auto.classifier_timeout_ms: must be in [1, 60000], got 0"),
    ({"capability_margin": 2}, "auto.capability_margin: must be in [0, 1], got 2"),
    ({"classifier": "gpt-9"}, 'auto.classifier: "gpt-9" is not "local" nor a model an enabled '
                              "channel serves"),
    ({"models": ["nope/*"]}, "auto.models: no model is eligible: every served model with a "
                             "[models] table is outside the patterns or the spend profile's "
                             "price caps"),
    ({"fallback": True}, "auto.fallback: unknown key; did you mean `fallbacks`?"),
])
def test_validation_errors_are_precise(auto: dict[str, Any], error: str) -> None:
    assert _errors(_doc(**auto)) == [error]


def test_quality_by_workload_is_validated() -> None:
    doc = _doc()
    doc["models"]["small"]["quality_by_workload"] = {"poetry": 0.8, "code": 1.2}
    assert _errors(doc) == [
        'models."small".quality_by_workload.poetry: unknown workload; valid: code, reasoning, '
        "tool_use, structured_output, translation, summary, general",
        'models."small".quality_by_workload.code: must be in [0, 1], got 1.2',
    ]


def test_a_model_classifier_must_be_served() -> None:
    assert parse(_doc(classifier="tiny"), environ={}).auto.classifier == "tiny"
