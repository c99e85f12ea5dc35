"""The keys added for SPEC Part II: channel formats, response naming and size, side requests,
telemetry and translation. Valid values, wrong types and unknown values, each error naming
its key path."""

from __future__ import annotations

from typing import Any

import pytest

from orca_cli.config import parse, redacted
from orca_cli.config.housekeeping import DEFAULT_HOUSEKEEPING, HousekeepingRule
from tests.config.helpers import errors_of, minimal_doc


def _cfg(doc: dict[str, Any]) -> Any:
    return parse(doc, source="orca.toml", environ={})


def _with_openai_channel(api: Any) -> dict[str, Any]:
    doc = minimal_doc()
    doc["channels"].append({"name": "oa", "type": "openai", "keys": ["k"], "models": ["big"],
                            "api": api})
    return doc


# --- channels: api as one format or a list -------------------------------------------------


def test_channel_api_list_gives_apis_in_order_and_api_is_the_first() -> None:
    ch = _cfg(_with_openai_channel(["responses", "openai"])).channel("oa")
    assert (ch.api, ch.apis) == ("responses", ("responses", "openai"))
    assert ch.accepts("openai") and ch.accepts("responses") and not ch.accepts("anthropic")


@pytest.mark.parametrize(("type_", "api"), [("openai", "openai"), ("anthropic", "anthropic"),
                                            ("deepseek", "openai")])
def test_channel_api_default_by_type_is_one_format(type_: str, api: str) -> None:
    doc = minimal_doc()
    doc["channels"].append({"name": "x", "type": type_, "keys": ["k"], "models": ["big"]})
    ch = _cfg(doc).channel("x")
    assert (ch.api, ch.apis) == (api, (api,))


def test_channel_api_responses_alone_is_valid() -> None:
    ch = _cfg(_with_openai_channel("responses")).channel("oa")
    assert (ch.api, ch.apis) == ("responses", ("responses",))


@pytest.mark.parametrize(
    ("api", "error"),
    [
        ([], 'channels[1].api: must list at least one format, e.g. ["openai"]'),
        (["openai", "openai"], 'channels[1].api: lists "openai" twice'),
        (["responses", "grpc"], ('channels[1].api[1]: must be one of "openai", "anthropic", '
                                '"responses", got "grpc"')),
        ([1], "channels[1].api[0]: must be a string, got 1 (an integer)"),
        (3, "channels[1].api: must be a string, got 3 (an integer)"),
    ],
)
def test_channel_api_errors_name_the_key(api: Any, error: str) -> None:
    assert error in errors_of(_with_openai_channel(api))


def test_a_sim_channel_speaks_exactly_the_formats_in_its_api() -> None:
    """SPEC §13.2: like a real channel; with no `api` written, "openai"."""
    ch = _cfg(minimal_doc()).channel("sim-a")
    assert ch is not None and ch.apis == ("openai",)
    assert [a for a in ("openai", "anthropic", "responses") if ch.accepts(a)] == ["openai"]
    doc = minimal_doc()
    doc["channels"][0]["api"] = ["anthropic", "responses"]
    ch = _cfg(doc).channel(doc["channels"][0]["name"])
    assert ch is not None
    assert [a for a in ("openai", "anthropic", "responses") if ch.accepts(a)] == [
        "anthropic", "responses"]


def test_config_show_writes_a_multi_format_api_as_the_list_and_no_derived_key() -> None:
    out = redacted(_cfg(_with_openai_channel(["responses", "openai"])))
    oa = next(c for c in out["channels"] if c["name"] == "oa")
    assert oa["api"] == ["responses", "openai"] and "apis" not in oa
    sim = next(c for c in out["channels"] if c["name"] == "sim-a")
    assert sim["api"] == "openai"


# --- [server] ---------------------------------------------------------------------------------


def test_server_response_model_and_max_response_mb() -> None:
    cfg = _cfg(minimal_doc())
    assert (cfg.server.response_model, cfg.server.max_response_mb) == ("requested", 64)
    doc = minimal_doc()
    doc["server"] = {"response_model": "served", "max_response_mb": 8}
    cfg = _cfg(doc)
    assert (cfg.server.response_model, cfg.server.max_response_mb) == ("served", 8.0)


@pytest.mark.parametrize(
    ("table", "error"),
    [
        ({"response_model": "client"},
         'server.response_model: must be one of "requested", "served", got "client"'),
        ({"response_model": 1}, "server.response_model: must be a string, got 1 (an integer)"),
        ({"max_response_mb": 0}, "server.max_response_mb: must be > 0, got 0"),
        ({"max_response_mb": "64"},
         'server.max_response_mb: must be a number, got "64" (a string)'),
    ],
)
def test_server_key_errors(table: dict[str, Any], error: str) -> None:
    doc = minimal_doc()
    doc["server"] = table
    assert errors_of(doc) == [error]


# --- [routing] side_router ---------------------------------------------------------------------


def test_side_router_defaults_to_background_when_that_router_exists_else_empty() -> None:
    assert _cfg(minimal_doc()).routing.side_router == ""
    doc = minimal_doc()
    doc["routers"]["background"] = {"weak_pool": ["cheap"], "session_aware": False,
                                    "escalation": {"mode": "off"}}
    assert _cfg(doc).routing.side_router == "orca/background"
    doc["routing"] = {"side_router": ""}
    assert _cfg(doc).routing.side_router == ""
    doc["routing"] = {"side_router": "coding"}
    assert _cfg(doc).routing.side_router == "coding"


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("orca/nope", ('routing.side_router: "orca/nope" names no router; write "orca/<router>" '
                      "or \"\" (the session's base pin); routers: coding")),
        (5, "routing.side_router: must be a string, got 5 (an integer)"),
    ],
)
def test_side_router_errors(value: Any, error: str) -> None:
    doc = minimal_doc()
    doc["routing"] = {"side_router": value}
    assert errors_of(doc) == [error]


def test_routing_unknown_key_is_an_error() -> None:
    doc = minimal_doc()
    doc["routing"] = {"side_routr": "coding"}
    assert errors_of(doc) == ["routing.side_routr: unknown key; did you mean `side_router`?"]


# --- [[housekeeping]] --------------------------------------------------------------------------


def test_housekeeping_defaults_apply_without_a_table_and_rules_replace_them() -> None:
    assert _cfg(minimal_doc()).housekeeping == DEFAULT_HOUSEKEEPING
    doc = minimal_doc()
    doc["housekeeping"] = [{"name": "mine", "agent": "x", "system_prefix": ["Title:"],
                            "max_tokens_le": 50}]
    assert _cfg(doc).housekeeping == (
        HousekeepingRule("mine", "x", ("Title:",), no_tools=True, max_tokens_le=50),)
    doc["housekeeping"] = []
    assert _cfg(doc).housekeeping == ()


def test_config_show_lists_the_effective_rules() -> None:
    out = redacted(_cfg(minimal_doc()))
    assert [r["name"] for r in out["housekeeping"]] == [r.name for r in DEFAULT_HOUSEKEEPING]
    assert out["housekeeping"][0]["system_prefix"] == list(DEFAULT_HOUSEKEEPING[0].system_prefix)


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        ({"system_prefix": ["x"]}, "housekeeping[0].name: is required"),
        ({"name": "r"}, ('housekeeping[0].system_prefix: must list at least one opening phrase, '
                        'e.g. ["You are a title generator"] (or set output_schema_keys)')),
        ({"name": "r", "system_prefix": []}, ("housekeeping[0].system_prefix: must list at least "
                                             'one opening phrase, e.g. ["You are a title '
                                             'generator"] (or set output_schema_keys)')),
        ({"name": "r", "system_prefix": ["  "]}, ("housekeeping[0].system_prefix[0]: must not "
                                                 "be empty")),
        ({"name": "r", "system_prefix": "x"},
         'housekeeping[0].system_prefix: must be an array, got "x" (a string)'),
        ({"name": "r", "system_prefix": ["x"], "no_tools": "yes"},
         'housekeeping[0].no_tools: must be true or false, got "yes" (a string)'),
        ({"name": "r", "system_prefix": ["x"], "max_tokens_le": 0},
         "housekeeping[0].max_tokens_le: must be >= 1, got 0"),
        ({"name": "r", "system_prefix": ["x"], "max_tokens_le": 1.5},
         "housekeeping[0].max_tokens_le: must be an integer, got 1.5 (a float)"),
        ({"name": "a b", "system_prefix": ["x"]},
         "housekeeping[0].name: must be letters, digits, '_', '.' or '-', got \"a b\""),
        ({"name": "r", "system_prefix": ["x"], "prefix": ["y"]},
         "housekeeping[0].prefix: unknown key; did you mean `system_prefix`?"),
    ],
)
def test_housekeeping_rule_errors(rule: dict[str, Any], error: str) -> None:
    doc = minimal_doc()
    doc["housekeeping"] = [rule]
    assert error in errors_of(doc)


def test_housekeeping_duplicate_names_and_wrong_shape() -> None:
    doc = minimal_doc()
    doc["housekeeping"] = [{"name": "r", "system_prefix": ["x"]},
                           {"name": "r", "system_prefix": ["y"]}]
    assert errors_of(doc) == [
        'housekeeping[1].name: duplicate rule name "r" (also housekeeping[0])']
    doc["housekeeping"] = {"name": "r"}
    assert errors_of(doc) == ["housekeeping: must be an array of tables, got a table (a table)"]


# --- [telemetry] and [translation] -------------------------------------------------------------


def test_telemetry_and_translation_defaults_and_values() -> None:
    cfg = _cfg(minimal_doc())
    assert (cfg.telemetry.otlp_endpoint, cfg.telemetry.service_name) == ("", "orca")
    t = cfg.translation
    assert (t.enabled, t.anthropic_cache, t.foreign_reasoning) == (True, "auto", "drop")
    doc = minimal_doc()
    doc["telemetry"] = {"otlp_endpoint": "http://127.0.0.1:4318", "service_name": "gw"}
    doc["translation"] = {"enabled": False, "anthropic_cache": "off",
                          "foreign_reasoning": "as_text"}
    cfg = _cfg(doc)
    assert (cfg.telemetry.otlp_endpoint, cfg.telemetry.service_name) == (
        "http://127.0.0.1:4318", "gw")
    t = cfg.translation
    assert (t.enabled, t.anthropic_cache, t.foreign_reasoning) == (False, "off", "as_text")


@pytest.mark.parametrize(
    ("table", "value", "error"),
    [
        ("telemetry", {"otlp_endpoint": "collector:4317"},
         ('telemetry.otlp_endpoint: must be an http:// or https:// URL (e.g. '
         '"http://127.0.0.1:4318"), got "collector:4317"')),
        ("telemetry", {"otlp_endpoint": 4318},
         "telemetry.otlp_endpoint: must be a string, got 4318 (an integer)"),
        ("telemetry", {"service_name": ""},
         'telemetry.service_name: must not be empty; the default is "orca"'),
        ("translation", {"enabled": "yes"},
         'translation.enabled: must be true or false, got "yes" (a string)'),
        ("translation", {"anthropic_cache": "on"},
         'translation.anthropic_cache: must be one of "auto", "off", got "on"'),
        ("translation", {"foreign_reasoning": "keep"},
         'translation.foreign_reasoning: must be one of "drop", "as_text", got "keep"'),
        ("translation", {"foreign_reasonning": "drop"},
         "translation.foreign_reasonning: unknown key; did you mean `foreign_reasoning`?"),
    ],
)
def test_telemetry_and_translation_errors(table: str, value: dict[str, Any], error: str) -> None:
    doc = minimal_doc()
    doc[table] = value
    assert errors_of(doc) == [error]


def test_an_otlp_endpoint_password_is_redacted() -> None:
    doc = minimal_doc()
    doc["telemetry"] = {"otlp_endpoint": "https://u:s3cret@otel.example:4318"}
    out = redacted(_cfg(doc))
    assert out["telemetry"]["otlp_endpoint"] == "https://u:***@otel.example:4318"
