"""The compiled indices (`Config.compiled`) answer what a scan of the config answers."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from orca_cli.config import load, loads
from orca_cli.config.schema import Config
from orca_cli.types import APIS

EXAMPLE = Path(__file__).resolve().parents[2] / "orca.toml.example"


def _scan_channel(cfg: Config, name: str) -> object:
    return next((ch for ch in cfg.channels if ch.name == name), None)


def test_channel_lookup_equals_the_linear_scan_on_the_example() -> None:
    cfg = load(str(EXAMPLE), environ={})
    names = [ch.name for ch in cfg.channels] + ["nope", ""]
    for name in names:
        assert cfg.channel(name) is _scan_channel(cfg, name)
    assert cfg.compiled.channel_index.keys() == {ch.name for ch in cfg.channels}


def test_serving_index_equals_the_scan_for_every_model_and_format() -> None:
    cfg = load(str(EXAMPLE), environ={})
    models = {m for ch in cfg.channels for m in ch.models}
    assert models, "the example lists models"
    for m in models:
        assert cfg.compiled.by_model[m] == tuple(ch for ch in cfg.channels if m in ch.models)
        for api in APIS:
            scan = tuple(ch for ch in cfg.channels
                         if ch.enabled and m in ch.models and api in ch.apis)
            assert cfg.compiled.serving_channels(m, api) == scan, (m, api)


def test_model_ids_strong_models_and_pools_equal_the_scan() -> None:
    cfg = load(str(EXAMPLE), environ={})
    enabled = [ch for ch in cfg.channels if ch.enabled]
    assert cfg.enabled_channels() == tuple(enabled)
    assert cfg.model_ids() == tuple(dict.fromkeys(m for ch in enabled for m in ch.models))
    strong = {m for r in cfg.routers.values() for m in r.escalation_pool}
    assert strong and cfg.strong_models() == strong
    for name, r in cfg.routers.items():
        pools = cfg.compiled.pools[name]
        assert (pools.base, pools.strong) == (r.base_pool, r.escalation_pool)
    for ch in cfg.channels:
        assert cfg.compiled.cache_ttl_s[ch.name] == ch.cache_ttl_s
        fps = cfg.compiled.key_fps[ch.name]
        assert dict(fps) == ({0: ""} if not ch.keys else {i: k.fp for i, k in enumerate(ch.keys)})


def test_the_indices_are_built_once_per_config_and_anew_for_a_replaced_one() -> None:
    cfg = load(str(EXAMPLE), environ={})
    assert cfg.compiled is cfg.compiled
    fewer = dataclasses.replace(cfg, channels=cfg.channels[:1])
    assert fewer.compiled is not cfg.compiled
    assert fewer.channel(cfg.channels[-1].name) is None


def test_the_glob_alias_matcher_prefers_the_longest_pattern_then_the_text() -> None:
    cfg = loads("""
[[channels]]
name = "s"
type = "sim"
models = ["m1", "m2"]
[aliases]
"claude-*" = "m1"
"claude-sonnet-*" = "m2"
"claude-s*" = "m1"
"exact" = "m2"
""")
    c = cfg.compiled
    assert c.alias_globs == ("claude-sonnet-*", "claude-s*", "claude-*")
    assert c.alias_key("claude-sonnet-4", cfg.aliases, globs=True) == "claude-sonnet-*"
    assert c.alias_key("claude-opus", cfg.aliases, globs=True) == "claude-*"
    assert c.alias_key("claude-opus", cfg.aliases, globs=False) is None
    assert c.alias_key("exact", cfg.aliases, globs=False) == "exact"
    assert c.alias_key("gpt", cfg.aliases, globs=True) is None


def test_housekeeping_no_tools_is_whether_every_rule_wants_none() -> None:
    """The side check's flag says what a scan of the rules says: every rule wants no tools."""
    from orca_cli.config.housekeeping import DEFAULT_HOUSEKEEPING, HousekeepingRule

    cfg = load(str(EXAMPLE), environ={})
    assert cfg.compiled.housekeeping_no_tools == all(r.no_tools for r in cfg.housekeeping)
    assert dataclasses.replace(cfg, housekeeping=DEFAULT_HOUSEKEEPING).compiled.housekeeping_no_tools
    wants = HousekeepingRule("small", "s", ("Summarize",), no_tools=False)
    mixed = dataclasses.replace(cfg, housekeeping=(*DEFAULT_HOUSEKEEPING, wants))
    assert not mixed.compiled.housekeeping_no_tools
