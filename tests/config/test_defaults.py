"""Every default of SPEC §2, transcribed from its TOML block, against the loader's output."""

from __future__ import annotations

import math
from typing import Any

from orca_cli.config import Config, loads, redacted
from orca_cli.config.schema import CHANNEL_TYPES, ChannelConfig, RouterConfig

# SPEC §2 "[server]" .. "[difficulty.*]", values shown are the defaults unless marked example.
SPEC_SERVER = {
    "host": "127.0.0.1", "port": 8787, "max_body_mb": 32, "connect_timeout_s": 10,
    "first_byte_timeout_s": 120, "idle_timeout_s": 300, "total_timeout_s": 900,
    "header_timeout_s": 10, "max_concurrency": 256, "allowed_hosts": [], "allowed_origins": [],
    "inbound_token": "", "trace_max": 20000, "trace_ttl_s": 86400,
    "response_model": "requested", "max_response_mb": 64,  # SPEC §14.2, §18
    "keep_alive_s": 75,  # orca's own (README, Configuration): longer than clients' idle expiry
}
SPEC_STATE = {
    "backend": "memory", "redis_mode": "single", "redis_url": "redis://127.0.0.1:6379/0",
    "sentinels": [], "sentinel_service": "mymaster", "key_prefix": "orca", "timeout_ms": 250,
}
SPEC_CHANNEL = {  # the non-example keys of [[channels]]
    "weight": 1, "enabled": True, "model_map": {}, "cache_ttl_s": 300,
    "pass_through_auth": False, "latency_ms": 0,
}
SPEC_ROUTER = {
    "strategy": "gated_adaptive", "mode": "balanced", "session_aware": True, "fallbacks": [],
    "t1": 0.35, "t2": 0.70, "linucb_alpha": 1.0, "linucb_cost_weight": 0.5,
}
SPEC_ESCALATION = {
    "mode": "auto", "pool": [], "threshold": "absolute", "t2": 0.55, "t1": 0.35,
    "percentile": 0.90, "streak": 2, "strikes": 2, "strike_window_turns": 6,
    "max_per_session": 1, "share_cap": 0.20, "share_window_h": 24, "warmup_requests": 20,
    "canary": 1.0, "tier_ttl_s": 14400, "clean_turns": 3,
}
SPEC_WORKSPACE = {"share_cap": 0.20}
SPEC_DIFFICULTY = {  # SPEC §4's table
    "log_prompt_tokens": (0.20, math.log(8001)),
    "reasoning_cue_count": (0.15, 5),
    "system_prompt_log_len": (0.10, math.log(2001)),
    "code_keyword_density": (0.20, 5.0),
    "has_tools": (0.15, 1),
    "math_marker_count": (0.20, 5),
}
MINIMAL = """
[[channels]]
name = "c"
type = "openai"
keys = ["k"]
models = ["m"]

[routers.r]
strong_pool = ["m"]
"""


def _effective() -> dict[str, Any]:
    return redacted(loads(MINIMAL, environ={}))


def test_server_state_workspace_defaults_match_spec() -> None:
    doc = _effective()
    assert doc["server"] == SPEC_SERVER
    assert doc["state"] == SPEC_STATE
    assert doc["workspace"] == SPEC_WORKSPACE


def test_channel_defaults_match_spec() -> None:
    ch = _effective()["channels"][0]
    for key, value in SPEC_CHANNEL.items():
        assert ch[key] == value, key
    assert ch["faults"] == {"status": 0, "rate": 0.0, "after_bytes": 0, "stall_s": 0.0,
                            "finish_reason": ""}  # faults = {} (off)
    assert ch["api"] == "openai" and ch["base_url"] == "https://api.openai.com"


def test_router_and_escalation_defaults_match_spec() -> None:
    router = _effective()["routers"]["r"]
    for key, value in SPEC_ROUTER.items():
        assert router[key] == value, key
    assert router["escalation"] == SPEC_ESCALATION


def test_difficulty_defaults_match_spec_section_4() -> None:
    diff = _effective()["difficulty"]
    assert set(diff) == set(SPEC_DIFFICULTY)
    for name, (weight, cap) in SPEC_DIFFICULTY.items():
        assert diff[name]["weight"] == weight, name
        assert math.isclose(diff[name]["cap"], cap), name


def test_dataclass_defaults_equal_loaded_defaults() -> None:
    cfg = loads(MINIMAL, environ={})
    base = Config()
    assert (cfg.server, cfg.state, cfg.workspace, cfg.difficulty) == (
        base.server, base.state, base.workspace, base.difficulty)
    assert cfg.routers["r"].escalation == RouterConfig(name="r").escalation


def test_empty_file_is_the_builtin_defaults() -> None:
    cfg = loads("", source="orca.toml", environ={})
    assert cfg == Config(source="orca.toml")


def test_cache_ttl_and_api_default_by_channel_type() -> None:
    text = "\n".join(
        f'[[channels]]\nname = "{t}"\ntype = "{t}"\nkeys = ["k"]\nmodels = ["m-{t}"]\n'
        + ('base_url = "http://127.0.0.1:9"\n' if t == "openai-compatible" else "")
        for t in CHANNEL_TYPES
    )
    cfg = loads(text, environ={})
    ttl = {ch.name: ch.cache_ttl_s for ch in cfg.channels}
    api = {ch.name: ch.api for ch in cfg.channels}
    assert ttl == {"openai": 300, "anthropic": 300, "deepseek": 3600, "gemini": 300,
                   "openrouter": 300, "openai-compatible": 300, "sim": 300}
    assert api["anthropic"] == "anthropic"
    assert {a for n, a in api.items() if n != "anthropic"} == {"openai"}
    assert cfg.channel("deepseek") is not None
    assert cfg.channel("deepseek").base_url == "https://api.deepseek.com"  # type: ignore[union-attr]


def test_explicit_api_and_cache_ttl_win_over_type_defaults() -> None:
    cfg = loads('[[channels]]\nname = "d"\ntype = "deepseek"\napi = "anthropic"\n'
                'cache_ttl_s = 120\nmodels = ["m"]\n', environ={})
    ch: ChannelConfig = cfg.channels[0]
    assert (ch.api, ch.cache_ttl_s) == ("anthropic", 120)


# The SPEC §2 block verbatim (comments dropped), plus what its examples refer to but do not
# define (a channel for deepseek-chat, the background router its alias names).
SPEC_BLOCK = """
[server]
host = "127.0.0.1"
port = 8787
max_body_mb = 32
connect_timeout_s = 10
first_byte_timeout_s = 120
idle_timeout_s = 300
total_timeout_s = 900
header_timeout_s = 10
max_concurrency = 256
allowed_hosts = []
allowed_origins = []
inbound_token = ""
trace_max = 20000
trace_ttl_s = 86400

[state]
backend = "memory"
redis_mode = "single"
redis_url = "redis://127.0.0.1:6379/0"
sentinels = []
sentinel_service = "mymaster"
key_prefix = "orca"
timeout_ms = 250

[[channels]]
name = "anthropic"
type = "anthropic"
api = "anthropic"
base_url = "https://api.anthropic.com"
keys = ["${ANTHROPIC_API_KEY}", "${ANTHROPIC_API_KEY_2}"]
weight = 1
enabled = true
models = ["claude-haiku-4-5", "claude-opus-4-1"]
model_map = {}
cache_ttl_s = 300
pass_through_auth = false
latency_ms = 0
faults = {}

[models."claude-haiku-4-5"]
input = 1.00
output = 5.00
cache_read = 0.10
cache_write = 1.25
quality = 0.70
context_window = 200000

[routers.coding]
strategy = "gated_adaptive"
mode = "balanced"
session_aware = true
allowed_models = ["deepseek-chat", "claude-haiku-4-5", "claude-opus-4-1"]
weak_pool = ["deepseek-chat"]
mid_pool = ["claude-haiku-4-5"]
strong_pool = ["claude-opus-4-1"]
fallbacks = []
t1 = 0.35
t2 = 0.70
linucb_alpha = 1.0
linucb_cost_weight = 0.5

[routers.coding.escalation]
mode = "auto"
pool = []
threshold = "absolute"
t2 = 0.55
t1 = 0.35
percentile = 0.90
streak = 2
strikes = 2
strike_window_turns = 6
max_per_session = 1
share_cap = 0.20
share_window_h = 24
warmup_requests = 20
canary = 1.0
tier_ttl_s = 14400
clean_turns = 3

[aliases]
"claude-sonnet-*" = "orca/coding"
"claude-haiku-*" = "orca/background"

[workspace]
share_cap = 0.20

[difficulty.log_prompt_tokens]
weight = 0.20
cap = 8.987

[routers.background]
strategy = "cheapest"
allowed_models = ["deepseek-chat"]
escalation = { mode = "off" }

[[channels]]
name = "deepseek"
type = "deepseek"
keys = ["${DEEPSEEK_API_KEY}"]
models = ["deepseek-chat"]
"""


def test_spec_block_loads_with_its_keys_in_the_environment() -> None:
    env = {"ANTHROPIC_API_KEY": "a1", "ANTHROPIC_API_KEY_2": "a2", "DEEPSEEK_API_KEY": "d1"}
    cfg = loads(SPEC_BLOCK, source="spec", environ=env)
    anthropic = cfg.channel("anthropic")
    assert anthropic is not None
    assert [k.reveal() for k in anthropic.keys] == ["a1", "a2"]
    assert cfg.routers["coding"].escalation_pool == ("claude-opus-4-1",)
    assert cfg.routers["coding"].base_pool == ("deepseek-chat", "claude-haiku-4-5")
    assert cfg.difficulty.log_prompt_tokens.cap == 8.987
    assert cfg.difficulty.has_tools == Config().difficulty.has_tools
