"""The shipped example (`orca.toml.example` = package `example.toml`) is valid and complete."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

import pytest

from orca_cli.config import check, example_text, load, template_text
from orca_cli.config.schema import (
    ChannelConfig,
    Config,
    DifficultyConfig,
    EscalationConfig,
    FaultConfig,
    FeatureConfig,
    HousekeepingRule,
    ModelConfig,
    RouterConfig,
    RoutingConfig,
    ServerConfig,
    StateConfig,
    TelemetryConfig,
    TranslationConfig,
    WorkspaceConfig,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "orca.toml.example"


def _fields(cls: type) -> set[str]:
    """The TOML keys of a schema table (a `derived` field is filled by the loader)."""
    return {f.name for f in dataclasses.fields(cls) if not f.metadata.get("derived")}


def test_repo_example_and_packaged_example_are_identical() -> None:
    assert EXAMPLE.read_text("utf-8") == example_text()
    assert template_text() == example_text()


def test_example_loads_with_no_environment_and_checks_clean() -> None:
    cfg = load(str(EXAMPLE), environ={})
    assert check(cfg) == []
    assert set(cfg.routers) == {"coding", "background", "auto"}  # auto: the implicit router


def test_example_routers_use_only_sim_channels_and_real_ones_are_off() -> None:
    cfg = load(str(EXAMPLE), environ={})
    enabled = cfg.enabled_channels()
    assert enabled and all(ch.type == "sim" for ch in enabled)
    assert {ch.api for ch in enabled} == {"openai", "anthropic"}
    assert all(len(ch.keys) == 3 for ch in enabled)
    real = {ch.type: ch for ch in cfg.channels if ch.type != "sim"}
    assert set(real) >= {"anthropic", "openai", "deepseek", "openrouter"}
    assert not any(ch.enabled for ch in real.values())


def test_example_real_channel_keys_come_from_the_environment() -> None:
    raw = tomllib.loads(EXAMPLE.read_text("utf-8"))
    for ch in raw["channels"]:
        if ch["type"] != "sim":
            assert ch["keys"] and all(k.startswith("${") for k in ch["keys"]), ch["name"]
    env = {"ANTHROPIC_API_KEY": "sk-ant-x", "OPENAI_API_KEY": "sk-o"}
    cfg = load(str(EXAMPLE), environ=env)
    anthropic = cfg.channel("anthropic")
    assert anthropic is not None and [k.reveal() for k in anthropic.keys] == ["sk-ant-x"]


def test_example_prices_are_the_dated_list_prices() -> None:
    text = EXAMPLE.read_text("utf-8")
    assert "List prices as of 2026-08 (Anthropic's\n# as of 2026-12)" in text
    m = load(str(EXAMPLE), environ={}).models
    got = {k: (v.input, v.output) for k, v in m.items()}
    assert got == {
        "claude-haiku-4-5": (1.0, 5.0), "claude-sonnet-4-6": (3.0, 15.0),
        "claude-opus-4-8": (5.0, 25.0), "gpt-4.1-mini": (0.40, 1.60),
        "gpt-4.1": (2.0, 8.0), "deepseek-chat": (0.27, 1.10),
    }
    assert m["claude-opus-4-8"].cache_write == 1.25
    assert (m["claude-opus-4-8"].context_window, m["claude-opus-4-8"].max_output_tokens) == (
        1_000_000, 128_000)
    assert (m["gpt-4.1-mini"].cache_read, m["gpt-4.1-mini"].cache_write) == (0.25, 1.0)
    assert (m["deepseek-chat"].cache_read, m["deepseek-chat"].cache_write) == (0.1, 1.0)


def test_example_routers_and_aliases() -> None:
    cfg = load(str(EXAMPLE), environ={})
    coding, background = cfg.routers["coding"], cfg.routers["background"]
    assert (coding.strategy, coding.session_aware, coding.escalation.mode) == (
        "gated_adaptive", True, "auto")
    assert coding.escalation.t2 == 0.55
    assert (background.strategy, background.session_aware) == ("cheapest", False)
    assert cfg.aliases["claude-sonnet-*"] == "orca/coding"
    assert cfg.aliases["claude-haiku-*"] == "orca/background"


def _walk_keys(table: dict[str, Any], out: set[str], prefix: str = "") -> None:
    for k, v in table.items():
        out.add(k)
        if isinstance(v, dict):
            _walk_keys(v, out)
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            for item in v:
                _walk_keys(item, out)


def test_example_writes_every_schema_key_at_least_once() -> None:
    raw = tomllib.loads(EXAMPLE.read_text("utf-8"))
    written: set[str] = set()
    _walk_keys(raw, written)
    classes = (ServerConfig, StateConfig, ChannelConfig, FaultConfig, ModelConfig, RouterConfig,
               EscalationConfig, WorkspaceConfig, FeatureConfig, DifficultyConfig, Config,
               RoutingConfig, TelemetryConfig, TranslationConfig)
    schema = set().union(*(_fields(c) for c in classes)) - {"housekeeping"}
    assert schema - written == set()


def test_example_documents_housekeeping_commented_out_and_keeps_the_shipped_rules() -> None:
    """A written [[housekeeping]] replaces the shipped rules, so the example shows one rule
    commented out (every key of the table) and loads with the defaults in effect."""
    text = EXAMPLE.read_text("utf-8")
    assert "housekeeping" not in tomllib.loads(text)
    for key in _fields(HousekeepingRule):
        assert f"# {key} = " in text, key
    cfg = load(str(EXAMPLE), environ={})
    assert {r.agent for r in cfg.housekeeping} >= {
        "claude-code", "codex", "opencode", "aider", "cline"}
    assert cfg.routing.side_router == "orca/background"


def test_example_openai_channel_speaks_responses_then_openai() -> None:
    ch = load(str(EXAMPLE), environ={}).channel("openai")
    assert ch is not None and not ch.enabled
    assert (ch.api, ch.apis) == ("responses", ("responses", "openai"))


@pytest.mark.parametrize(("sent", "target"), [
    ("claude-opus-5-5", "coding"),  # Claude Code 2.1's default
    ("claude-sonnet-4-5-20250929", "coding"),
    ("claude-3-7-sonnet-latest", "coding"),
    ("claude-3-5-haiku-latest", "background"),
    ("claude-3-5-haiku-20241022", "background"),
    ("gpt-5-codex", "coding"),
    ("gpt-5.1-codex", "coding"),
    ("gpt-6.2-sol", "coding"),  # Codex 0.171's default when its config names no model
    ("o3", "coding"),
    ("o4-mini", "coding"),
    ("gemini-2.5-pro", "coding"),
])
def test_example_aliases_catch_the_names_current_agents_send(sent: str, target: str) -> None:
    from orca_cli.routing.target import resolve_target

    got = resolve_target(sent, load(str(EXAMPLE), environ={}))
    assert got.kind == "router" and got.router == target


@pytest.mark.parametrize(("sent", "model"), [("gpt-4.1-2025-04-14", "gpt-4.1"),
                                              ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
                                              ("gpt-4.1", "gpt-4.1")])
def test_example_dated_openai_ids_reach_their_model(sent: str, model: str) -> None:
    from orca_cli.routing.target import resolve_target

    got = resolve_target(sent, load(str(EXAMPLE), environ={}))
    assert got.kind == "model" and got.model == model
