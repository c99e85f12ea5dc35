"""Strict validation (SPEC §2): unknown keys, types, ranges, cross-references, §11 token."""

from __future__ import annotations

from typing import Any

import pytest

from orca_cli.config import parse
from orca_cli.errors import ConfigError

from .helpers import errors_of, minimal_doc


def _set(doc: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    node: Any = doc
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    node[parts[-1]] = value
    return doc


def test_error_message_has_file_key_and_why() -> None:
    doc = _set(minimal_doc(), "routers.coding.escalation.share_cap", 1.5)
    with pytest.raises(ConfigError) as info:
        parse(doc, source="orca.toml", environ={})
    assert str(info.value) == (
        "orca.toml: routers.coding.escalation.share_cap: must be in (0, 1], got 1.5")
    assert (info.value.path, info.value.key) == ("orca.toml", "routers.coding.escalation.share_cap")


@pytest.mark.parametrize(
    ("dotted", "suggestion"),
    [
        ("routers.coding.escalation.sharecap", "share_cap"),
        ("server.prot", "port"),
        ("state.backnd", "backend"),
        ("channels.0.weigth", "weight"),
        ("difficulty.has_tool", "has_tools"),
        ("routers.coding.strong_pools", "strong_pool"),
        ("workspace.share_cp", "share_cap"),
        ("models.cheap.ouput", "output"),
    ],
)
def test_unknown_key_is_an_error_with_closest_suggestion(dotted: str, suggestion: str) -> None:
    doc = minimal_doc()
    value: Any = {"weight": 1.0} if dotted.startswith("difficulty") else 1
    _set(doc, dotted, value)
    key = dotted.replace("channels.0", "channels[0]")
    assert errors_of(doc) == [f"{key}: unknown key; did you mean `{suggestion}`?"]


def test_unknown_top_level_key_lists_the_valid_ones() -> None:
    (err,) = errors_of({**minimal_doc(), "zzz": {}})
    assert err.startswith("zzz: unknown key; valid keys here: server, state, channels")
    assert "source" not in err


@pytest.mark.parametrize(
    ("dotted", "value", "why"),
    [
        ("server.port", "8787", 'must be an integer, got "8787" (a string)'),
        ("server.port", 87.5, "must be an integer, got 87.5 (a float)"),
        ("server.host", 127, "must be a string, got 127 (an integer)"),
        ("server.max_body_mb", True, "must be a number, got true (a boolean)"),
        ("routers.coding.session_aware", "yes", 'must be true or false, got "yes" (a string)'),
        ("routers.coding.strategy", "smart", 'must be one of "cheapest", "quality", "balanced", '
                                             '"linucb", "gated_adaptive", "auto", got "smart"'),
        ("routers.coding.escalation.mode", "on",
         'must be one of "off", "shadow", "auto", got "on"'),
        ("routers.coding.mode", "fastest", 'must be one of "balanced", "price", "latency", '
                                           '"throughput", got "fastest"'),
        ("state.backend", "etcd", 'must be one of "memory", "redis", got "etcd"'),
        ("channels.0.type", "azure", 'must be one of "openai", "anthropic", "deepseek", "gemini", '
                                     '"openrouter", "openai-compatible", "sim", got "azure"'),
        ("channels.0.api", "grpc", 'must be one of "openai", "anthropic", "responses", got "grpc"'),
        ("channels.0.models", "cheap", 'must be an array, got "cheap" (a string)'),
        ("server.allowed_hosts", [1], "must be a string, got 1 (an integer)"),
        ("routers.coding.escalation", 3, "must be a table, got 3 (an integer)"),
    ],
)
def test_wrong_type_is_an_error(dotted: str, value: Any, why: str) -> None:
    doc = _set(minimal_doc(), dotted, value)
    key = dotted.replace("channels.0", "channels[0]")
    if dotted == "server.allowed_hosts":
        key += "[0]"
    assert errors_of(doc) == [f"{key}: {why}"]


def test_channels_as_a_table_is_an_error() -> None:
    doc = minimal_doc()
    doc["channels"] = {"name": "x"}
    assert errors_of(doc)[0] == "channels: must be an array of tables, got a table (a table)"


@pytest.mark.parametrize(
    ("dotted", "value", "why"),
    [
        ("server.port", 0, "must be in [1, 65535], got 0"),
        ("server.port", 70000, "must be in [1, 65535], got 70000"),
        ("server.connect_timeout_s", 0, "must be > 0, got 0"),
        ("server.total_timeout_s", -1, "must be > 0, got -1"),
        ("server.max_concurrency", 0, "must be >= 1, got 0"),
        ("state.timeout_ms", 0, "must be > 0, got 0"),
        ("channels.0.weight", -0.5, "must be >= 0, got -0.5"),
        ("channels.0.cache_ttl_s", 0, "must be > 0, got 0"),
        ("channels.0.faults.rate", 1.5, "must be in [0, 1], got 1.5"),
        ("channels.0.faults.status", 42, "must be 0 (off) or an HTTP status in [100, 599], got 42"),
        ("models.cheap.quality", 1.2, "must be in [0, 1], got 1.2"),
        ("models.cheap.input", -1, "must be >= 0, got -1"),
        ("models.cheap.context_window", 0, "must be >= 1, got 0"),
        ("routers.coding.escalation.share_cap", 0, "must be in (0, 1], got 0"),
        ("routers.coding.escalation.canary", 1.1, "must be in [0, 1], got 1.1"),
        ("routers.coding.escalation.percentile", 1.0, "must be in (0, 1), got 1"),
        ("routers.coding.escalation.streak", 0, "must be >= 1, got 0"),
        ("routers.coding.escalation.max_per_session", -1, "must be >= 0, got -1"),
        ("routers.coding.escalation.tier_ttl_s", 0, "must be > 0, got 0"),
        ("routers.coding.linucb_alpha", -1, "must be >= 0, got -1"),
        ("workspace.share_cap", 2, "must be in (0, 1], got 2"),
        ("difficulty.has_tools.weight", -0.1, "must be >= 0, got -0.1"),
        ("difficulty.has_tools.cap", 0, "must be > 0, got 0"),
    ],
)
def test_out_of_range_is_an_error(dotted: str, value: Any, why: str) -> None:
    doc = _set(minimal_doc(), dotted, value)
    key = dotted.replace("channels.0", "channels[0]")
    assert errors_of(doc) == [f"{key}: {why}"]


def test_t1_must_be_below_t2_for_router_and_escalation() -> None:
    doc = _set(minimal_doc(), "routers.coding.t1", 0.8)
    _set(doc, "routers.coding.escalation.t1", 0.6)
    assert errors_of(doc) == [
        "routers.coding.escalation.t1: must be less than t2 (0.55), got 0.6",
        "routers.coding.t1: must be less than t2 (0.7), got 0.8",
    ]


def test_strike_window_must_hold_the_strikes() -> None:
    doc = _set(minimal_doc(), "routers.coding.escalation.strikes", 4)
    _set(doc, "routers.coding.escalation.strike_window_turns", 3)
    assert errors_of(doc) == [
        "routers.coding.escalation.strike_window_turns: must be >= strikes (4), got 3"]


def test_at_most_eight_fallbacks() -> None:
    doc = minimal_doc()
    doc["channels"][0]["models"] += [f"m{i}" for i in range(9)]
    _set(doc, "routers.coding.fallbacks", [f"m{i}" for i in range(9)])
    assert errors_of(doc) == ["routers.coding.fallbacks: must list at most 8 models, got 9"]
    _set(doc, "routers.coding.fallbacks", [f"m{i}" for i in range(8)])
    assert errors_of(doc) == []


def test_router_pools_must_name_known_models() -> None:
    doc = _set(minimal_doc(), "routers.coding.fallbacks", ["cheep"])
    _set(doc, "routers.coding.escalation.pool", ["gigantic"])
    errs = errors_of(doc)
    assert errs[0].startswith(
        'routers.coding.fallbacks[0]: unknown model "cheep"; did you mean "cheap"?')
    assert errs[1].startswith('routers.coding.escalation.pool[0]: unknown model "gigantic"')
    assert len(errs) == 2


def test_models_of_disabled_channels_and_model_tables_are_known() -> None:
    doc = minimal_doc()
    doc["channels"].append({"name": "off", "type": "openai", "enabled": False, "models": ["x"]})
    doc["models"] = {"priced-only": {"input": 1.0}}
    _set(doc, "routers.coding.fallbacks", ["x", "priced-only"])
    assert errors_of(doc) == []


def test_band_outside_allowed_models_is_an_error() -> None:
    doc = _set(minimal_doc(), "routers.coding.allowed_models", ["cheap"])
    assert errors_of(doc) == ['routers.coding.strong_pool[0]: "big" is not in allowed_models']


def test_allowed_models_default_to_the_bands() -> None:
    cfg = parse(minimal_doc(), environ={})
    assert cfg.routers["coding"].allowed_models == ("cheap", "big")
    assert cfg.routers["coding"].base_pool == ("cheap",)


def test_router_without_models_is_an_error() -> None:
    doc = minimal_doc()
    doc["routers"]["empty"] = {"escalation": {"mode": "off"}}
    assert errors_of(doc) == [
        "routers.empty.allowed_models: must list at least one model (the router has none)"]


def test_router_name_key_is_implied_not_written() -> None:
    doc = _set(minimal_doc(), "routers.coding.name", "other")
    assert errors_of(doc)[0].startswith("routers.coding.name: unknown key")
    assert parse(minimal_doc(), environ={}).routers["coding"].name == "coding"


def test_duplicate_channel_names_are_an_error() -> None:
    doc = minimal_doc()
    doc["channels"].append({"name": "sim-a", "type": "sim", "models": ["cheap"]})
    assert errors_of(doc) == ['channels[1].name: duplicate channel name "sim-a" (also channels[0])']


def test_channel_name_is_required_and_has_no_colon() -> None:
    doc = minimal_doc()
    doc["channels"].append({"type": "sim", "models": ["cheap"]})
    doc["channels"].append({"name": "a:b", "type": "sim"})
    errs = errors_of(doc)
    assert errs[0] == "channels[1].name: is required"
    assert errs[1].startswith("channels[2].name: must be letters, digits")


@pytest.mark.parametrize(
    ("target", "ok"),
    [
        ("orca/coding", True), ("coding", True), ("cheap", True), ("sim-a:big", True),
        ("cheap:nitro", True), ("sim-a:cheap:fast", True),
        ("orca/codng", False), ("nothing", False), ("sim-a:absent", False),
    ],
)
def test_alias_targets_must_resolve(target: str, ok: bool) -> None:
    doc = minimal_doc()
    doc["aliases"] = {"claude-*": target}
    errs = errors_of(doc)
    if ok:
        assert errs == []
    else:
        assert len(errs) == 1 and errs[0].startswith(f'aliases."claude-*": target "{target}"')


def test_an_alias_to_a_channel_that_does_not_serve_the_model_says_which_do() -> None:
    doc = minimal_doc()
    served = "big"  # a model `sim-a` serves
    doc["channels"].append({**doc["channels"][0], "name": "other", "models": ["solo"]})
    doc["aliases"] = {"claude-*": f"other:{served}"}
    (err,) = errors_of(doc)
    assert f'channel "other" does not serve "{served}" ({doc["channels"][0]["name"]} does)' \
        in err and "it serves solo" in err


def test_non_loopback_host_without_token_is_refused() -> None:
    doc = _set(minimal_doc(), "server.host", "0.0.0.0")
    (err,) = errors_of(doc)
    assert err.startswith('server.inbound_token: is required when server.host is not loopback '
                          '(host = "0.0.0.0")')
    _set(doc, "server.inbound_token", "${TOKEN}")
    assert errors_of(doc, {"TOKEN": "t0k"}) == []
    for loopback in ("localhost", "127.0.0.2", "::1", "[::1]"):
        assert errors_of(_set(minimal_doc(), "server.host", loopback)) == [], loopback


def test_sim_only_keys_on_a_real_channel() -> None:
    doc = minimal_doc()
    doc["channels"].append({"name": "real", "type": "openai", "models": ["cheap"],
                            "latency_ms": 5, "faults": {}})
    assert errors_of(doc) == ['channels[1].latency_ms: is for type = "sim" channels only '
                              '(type = "openai")']


def test_openai_compatible_needs_a_base_url_and_urls_are_http() -> None:
    doc = minimal_doc()
    doc["channels"].append({"name": "local", "type": "openai-compatible", "models": ["cheap"]})
    doc["channels"].append({"name": "bad", "type": "openai", "base_url": "ftp://x"})
    assert errors_of(doc) == [
        'channels[1].base_url: is required for type = "openai-compatible"',
        'channels[2].base_url: must be an http:// or https:// URL, got "ftp://x"',
    ]


def test_model_map_must_map_listed_models() -> None:
    doc = _set(minimal_doc(), "channels.0.model_map", {"cheap": "up", "other": "up2"})
    assert errors_of(doc) == [
        "channels[0].model_map.other: maps a model this channel does not list in `models`"]


def test_state_rules() -> None:
    doc = minimal_doc()
    doc["state"] = {"backend": "redis", "redis_mode": "sentinel", "key_prefix": "a{b}",
                    "redis_url": "http://x"}
    assert errors_of(doc) == [
        'state.key_prefix: must be non-empty without braces or spaces, got "a{b}"',
        'state.redis_url: must be a redis://, rediss:// or unix:// URL, got "http://x"',
        'state.sentinels: must list at least one "host:port" when redis_mode = "sentinel"',
    ]


def test_every_error_is_collected_and_load_raises_the_first_with_a_count() -> None:
    doc = _set(minimal_doc(), "server.port", 0)
    _set(doc, "workspace.share_cap", 5)
    assert len(errors_of(doc)) == 2
    with pytest.raises(ConfigError, match=r"server\.port: .*\(and 1 more; run `orca config check`"):
        parse(doc, environ={})


def test_difficulty_table_may_give_only_one_key() -> None:
    doc = minimal_doc()
    doc["difficulty"] = {"has_tools": {"weight": 0.3}}
    cfg = parse(doc, environ={})
    assert (cfg.difficulty.has_tools.weight, cfg.difficulty.has_tools.cap) == (0.3, 1.0)
