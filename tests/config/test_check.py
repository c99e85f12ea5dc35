"""`check()`: SPEC §2's `config check` extras on a loaded config."""

from __future__ import annotations

from typing import Any

from orca_cli.config import check, parse

from .helpers import minimal_doc


def _issues(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(i.severity, i.key, i.why) for i in check(parse(doc, source="f.toml", environ={}))]


def _two_format_doc() -> dict[str, Any]:
    doc = minimal_doc()
    doc["channels"].append({"name": "sim-b", "type": "sim", "api": "anthropic", "keys": ["k"],
                            "models": ["cheap-a", "big-a"]})
    doc["routers"]["coding"] = {"weak_pool": ["cheap", "cheap-a"], "strong_pool": ["big", "big-a"]}
    doc["models"] = {m: {"input": 1.0} for m in ("cheap", "big", "cheap-a", "big-a")}
    return doc


def test_complete_config_has_no_issues() -> None:
    assert _issues(_two_format_doc()) == []


def test_empty_escalation_pool_with_mode_not_off_is_an_error() -> None:
    doc = _two_format_doc()
    doc["routers"]["coding"] = {"weak_pool": ["cheap", "cheap-a"]}
    errors = [i for i in _issues(doc) if i[0] == "error"]
    assert errors == [("error", "routers.coding.escalation.pool",
                       'escalation mode is "auto" but the escalation pool is empty (pool and '
                       'strong_pool are both empty); list models in strong_pool, '
                       'or set mode = "off"')]
    doc["routers"]["coding"]["escalation"] = {"mode": "off"}
    assert [i for i in _issues(doc) if i[0] == "error"] == []


def test_escalation_pool_naming_an_unknown_model_is_an_error() -> None:
    from dataclasses import replace

    cfg = parse(_two_format_doc(), environ={})
    router = cfg.routers["coding"]
    bad = replace(cfg, routers={"coding": replace(router, escalation=replace(
        router.escalation, pool=("ghost",)))})
    (issue,) = [i for i in check(bad) if i.severity == "error"]
    assert issue.key == "routers.coding.escalation.pool" and '"ghost"' in issue.why


def _untranslated(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with translation off: a channel serves only the formats it speaks (SPEC §13.2)."""
    doc["translation"] = {"enabled": False}
    return doc


def test_tier_without_a_candidate_for_a_format_warns_per_format_and_tier() -> None:
    doc = _untranslated(minimal_doc())  # openai-only sim channel
    doc["models"] = {"cheap": {}, "big": {}}
    warnings = [i for i in _issues(doc) if i[0] == "warning"]
    tail = 'has no model served by an enabled channel with api = "anthropic"'
    assert [(w[1], w[2].split(";")[0]) for w in warnings] == [
        ("routers.coding", f"the base tier {tail}"),
        ("routers.coding", f"the strong tier {tail}"),
    ]


def test_with_translation_on_a_tier_of_one_format_serves_every_format_without_warning() -> None:
    doc = minimal_doc()  # openai-only sim channel; [translation] enabled by default
    doc["models"] = {"cheap": {}, "big": {}}
    assert _issues(doc) == []


def test_disabled_channels_do_not_count_as_candidates() -> None:
    doc = _untranslated(_two_format_doc())
    doc["channels"][1]["enabled"] = False
    keys = {(i[1], i[2].split(";")[0]) for i in _issues(doc)}
    assert ("routers.coding", 'the strong tier has no model served by an enabled channel with '
                              'api = "anthropic"') in keys
    assert ("routers.coding", 'model "big-a" is served by no enabled channel') in keys


def test_strong_tier_is_not_checked_when_escalation_is_off() -> None:
    doc = _untranslated(minimal_doc())
    doc["models"] = {"cheap": {}, "big": {}}
    doc["routers"]["coding"]["escalation"] = {"mode": "off"}
    assert [i[2].split(";")[0] for i in _issues(doc)] == [
        'the base tier has no model served by an enabled channel with api = "anthropic"']


def test_served_model_without_price_table_warns() -> None:
    doc = _two_format_doc()
    del doc["models"]["big"]
    assert ("warning", "models.big", "has no [models] table: its cost counts as 0") in _issues(doc)


def test_issue_string_names_file_and_key() -> None:
    doc = _untranslated(minimal_doc())
    (first, *_rest) = check(parse(doc, source="f.toml", environ={}))
    assert str(first).startswith("f.toml: routers.coding: the base tier")


def test_a_tier_of_models_that_read_no_images_warns() -> None:
    doc = minimal_doc()
    doc["models"] = {"cheap": {"vision": False}, "big": {}}
    warnings = [i for i in _issues(doc) if i[0] == "warning"]
    assert warnings == [("warning", "routers.coding",
                         "every model of the base tier reads no images (vision = false): a "
                         "request carrying an image or a PDF cannot be served base by this "
                         "router")]
    doc["models"] = {"cheap": {}, "big": {}}
    assert _issues(doc) == []


def test_an_openai_channel_of_chat_completions_only_warns_of_tool_turns_losing_their_effort(
        ) -> None:
    doc = _two_format_doc()
    doc["channels"].append({"name": "oa", "type": "openai", "keys": ["k"],
                            "models": ["gpt-5.4", "gpt-4.1-mini", "gpt-5.1"]})
    doc["models"].update({m: {"input": 1.0} for m in ("gpt-5.4", "gpt-4.1-mini", "gpt-5.1")})
    (warning,) = [i for i in _issues(doc) if i[1] == "channels[2].api"]
    assert warning[0] == "warning"
    assert "where gpt-5.4 refuses a reasoning effort beside function tools" in warning[2]
    assert 'api = ["responses", "openai"]' in warning[2]
    doc["channels"][2]["api"] = ["openai", "responses"]  # the Responses API takes both
    assert [i for i in _issues(doc) if i[1] == "channels[2].api"] == []
    doc["channels"][2] = {**doc["channels"][2], "type": "openrouter", "api": "openai"}
    assert [i for i in _issues(doc) if i[1] == "channels[2].api"] == []


def test_a_gpt_5_6_model_priced_without_its_cache_write_warns() -> None:
    doc = _two_format_doc()
    doc["models"].update({"gpt-6.2-sol": {"input": 5.0}, "gpt-5.6-luna": {"cache_write": 1.25},
                          "gpt-5.4": {"input": 1.25}})
    warns = [i for i in _issues(doc) if i[1].endswith(".cache_write")]
    assert warns == [("warning", 'models."gpt-6.2-sol".cache_write',
                      "is 1, but GPT-5.6 and later bill a prompt-cache write at 1.25x the input "
                      "price: spend and budgets count those writes low")]


def test_a_chat_only_channel_serving_a_model_that_takes_tools_only_on_responses_warns() -> None:
    doc = _two_format_doc()
    doc["channels"].append({"name": "oa", "type": "openai", "keys": ["k"],
                            "models": ["gpt-6.2-sol", "gpt-6-luna"]})
    doc["models"].update({m: {"input": 1.0, "cache_write": 1.25}
                          for m in ("gpt-6.2-sol", "gpt-6-luna")})
    (warning,) = [i for i in _issues(doc) if i[1] == "channels[2].api"]
    assert ("gpt-6-luna refuses a reasoning effort beside function tools, so an agent's tool "
            "turns go there without it; gpt-6.2-sol takes function tools only on the "
            "Responses API, so an agent's tool turns go to another model") in warning[2]
