"""Per-table rules the type walk cannot express: numeric ranges, per-type defaults (a
channel's api, base_url and cache window) and each table's own checks (SPEC §2, §11)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from orca_cli.config.auto import AutoConfig, post_auto
from orca_cli.config.housekeeping import HousekeepingRule
from orca_cli.config.redact import redact_url
from orca_cli.config.routes import (
    BudgetsConfig,
    InboundKey,
    RouteConfig,
    RouteNode,
    post_inbound_key,
    post_route,
    post_route_node,
)
from orca_cli.config.schema import (
    DEFAULT_API_BY_TYPE,
    DEFAULT_BASE_URL_BY_TYPE,
    DEFAULT_CACHE_TTL_BY_TYPE,
    UNMAPPED_CACHE_TTL_S,
    ChannelConfig,
    ChannelPrice,
    Config,
    EscalationConfig,
    FaultConfig,
    FeatureConfig,
    ModelConfig,
    RouterConfig,
    ServerConfig,
    StateConfig,
    TelemetryConfig,
    WorkspaceConfig,
)
from orca_cli.config.walk import Ctx, Range, join_key, show
from orca_cli.hosts import is_loopback_host
from orca_cli.types import Api

__all__ = ["MAX_FALLBACKS", "POST", "RANGES"]

MAX_FALLBACKS = 8

_POS, _NONNEG, _ONE_UP = Range(0, lo_open=True), Range(0), Range(1)
_UNIT, _SHARE, _OPEN_UNIT = Range(0, 1), Range(0, 1, lo_open=True), Range(0, 1, True, True)
RANGES: dict[type, dict[str, Range]] = {
    ServerConfig: {
        "port": Range(1, 65535), "max_body_mb": _POS, "connect_timeout_s": _POS,
        "first_byte_timeout_s": _POS, "idle_timeout_s": _POS, "total_timeout_s": _POS,
        "header_timeout_s": _POS, "keep_alive_s": _ONE_UP, "max_concurrency": _ONE_UP,
        "trace_max": _ONE_UP, "max_response_mb": _POS, "trace_ttl_s": _POS,
    },
    StateConfig: {"timeout_ms": _POS},
    FaultConfig: {"rate": _UNIT, "after_bytes": _NONNEG, "stall_s": _NONNEG},
    ChannelConfig: {
        "weight": _NONNEG, "cache_ttl_s": _POS, "latency_ms": _NONNEG,
        "expected_latency_ms": _NONNEG, "expected_tps": _NONNEG,
    },
    ChannelPrice: {"input": _NONNEG, "output": _NONNEG, "cache_read": _NONNEG,
                   "cache_write": _NONNEG},
    ModelConfig: {
        "input": _NONNEG, "output": _NONNEG, "cache_read": _NONNEG, "cache_write": _NONNEG,
        "quality": _UNIT, "context_window": _ONE_UP, "max_output_tokens": _ONE_UP,
        "fast": _ONE_UP,
    },
    EscalationConfig: {
        "t2": _UNIT, "t1": _UNIT, "percentile": _OPEN_UNIT, "streak": _ONE_UP,
        "strikes": _ONE_UP, "strike_window_turns": _ONE_UP, "max_per_session": _NONNEG,
        "share_cap": _SHARE, "share_window_h": _ONE_UP, "warmup_requests": _NONNEG,
        "canary": _UNIT, "tier_ttl_s": _POS, "clean_turns": _NONNEG,
    },
    RouterConfig: {
        "t1": _UNIT, "t2": _UNIT, "linucb_alpha": _NONNEG, "linucb_cost_weight": _NONNEG,
    },
    WorkspaceConfig: {"share_cap": _SHARE},
    FeatureConfig: {"weight": _NONNEG, "cap": _POS},
    HousekeepingRule: {"max_tokens_le": _ONE_UP},
    RouteNode: {"requests": _NONNEG, "usd": _NONNEG},
    BudgetsConfig: {"session_usd": _NONNEG, "day_usd": _NONNEG, "month_usd": _NONNEG},
}


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _post_server(s: ServerConfig, raw: Mapping[str, Any], path: str, ctx: Ctx) -> ServerConfig:
    if not s.host:
        ctx.error(join_key(path, "host"), 'must not be empty; the default is "127.0.0.1"')
    elif not is_loopback_host(s.host) and not s.inbound_token:
        ctx.error(
            join_key(path, "inbound_token"),
            f'is required when server.host is not loopback (host = "{s.host}"); set it, '
            'e.g. inbound_token = "${ORCA_INBOUND_TOKEN}"',
        )
    for i, origin in enumerate(s.allowed_origins):
        if not re.fullmatch(r"https?://[^/\s]+", origin):
            ctx.error(f"{join_key(path, 'allowed_origins')}[{i}]",
                      f'must be an origin like "https://example.com", got {show(origin)}')
    return s


def _post_state(s: StateConfig, raw: Mapping[str, Any], path: str, ctx: Ctx) -> StateConfig:
    if not s.key_prefix or any(c in s.key_prefix for c in "{} "):
        ctx.error(join_key(path, "key_prefix"),
                  f"must be non-empty without braces or spaces, got {show(s.key_prefix)}")
    if urlsplit(s.redis_url).scheme not in ("redis", "rediss", "unix"):
        shown = show(redact_url(s.redis_url))
        ctx.error(join_key(path, "redis_url"),
                  f"must be a redis://, rediss:// or unix:// URL, got {shown}")
    for i, hp in enumerate(s.sentinels):
        host, _, port = hp.rpartition(":")
        if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            ctx.error(f"{join_key(path, 'sentinels')}[{i}]", f'must be "host:port", got {show(hp)}')
    if s.backend == "redis" and s.redis_mode == "sentinel" and not s.sentinels:
        ctx.error(join_key(path, "sentinels"),
                  'must list at least one "host:port" when redis_mode = "sentinel"')
    return s


def _post_faults(f: FaultConfig, raw: Mapping[str, Any], path: str, ctx: Ctx) -> FaultConfig:
    if f.status != 0 and not 100 <= f.status <= 599:
        ctx.error(join_key(path, "status"),
                  f"must be 0 (off) or an HTTP status in [100, 599], got {f.status}")
    return f


def _post_channel(ch: ChannelConfig, raw: Mapping[str, Any], path: str, ctx: Ctx) -> ChannelConfig:
    """Per-type defaults (api, base_url, cache window) and the channel's own rules."""
    apis = _channel_apis(ch, raw, path, ctx)
    base_url = ch.base_url or DEFAULT_BASE_URL_BY_TYPE.get(ch.type, "")
    ttl = ch.cache_ttl_s
    if "cache_ttl_s" not in raw:
        ttl = DEFAULT_CACHE_TTL_BY_TYPE.get(ch.type, UNMAPPED_CACHE_TTL_S)
    ch = dataclasses.replace(ch, api=apis[0], apis=apis, base_url=base_url, cache_ttl_s=ttl)
    if "name" in raw and not _NAME.fullmatch(ch.name):
        ctx.error(join_key(path, "name"),
                  f"must be letters, digits, '_', '.' or '-' (no ':'), got {show(ch.name)}")
    if ch.type != "sim":
        sim_only = {"latency_ms": ch.latency_ms != 0, "faults": ch.faults != FaultConfig()}
        for key, used in sim_only.items():
            if used:
                ctx.error(join_key(path, key),
                          f'is for type = "sim" channels only (type = "{ch.type}")')
        if base_url and not re.match(r"https?://", base_url):
            ctx.error(join_key(path, "base_url"),
                      f"must be an http:// or https:// URL, got {show(base_url)}")
        if not base_url and ch.enabled:
            ctx.error(join_key(path, "base_url"), f'is required for type = "{ch.type}"')
    for key in ("model_map", "prices"):
        for model in getattr(ch, key):
            if model not in ch.models:
                verb = "maps" if key == "model_map" else "prices"
                ctx.error(join_key(join_key(path, key), model),
                          f"{verb} a model this channel does not list in `models`")
    return ch


def _channel_apis(
    ch: ChannelConfig, raw: Mapping[str, Any], path: str, ctx: Ctx
) -> tuple[Api, ...]:
    """`api = "openai"` or `api = ["responses", "openai"]` (the first is the translation
    target); absent: the type's default."""
    default: Api = DEFAULT_API_BY_TYPE.get(ch.type, "openai")
    if "api" not in raw:
        return (default,)
    value: Any = ch.api
    if isinstance(value, str):
        return (value,)  # type: ignore[return-value]
    listed: tuple[Api, ...] = value
    if not listed:
        if isinstance(raw["api"], list) and not raw["api"]:
            ctx.error(join_key(path, "api"), 'must list at least one format, e.g. ["openai"]')
        return (default,)
    for i, api in enumerate(listed):
        if api in listed[:i]:
            ctx.error(join_key(path, "api"), f"lists {show(api)} twice")
            return tuple(dict.fromkeys(listed))
    return listed


def _post_escalation(
    e: EscalationConfig, raw: Mapping[str, Any], path: str, ctx: Ctx
) -> EscalationConfig:
    if e.t1 >= e.t2:
        ctx.error(join_key(path, "t1"), f"must be less than t2 ({show(e.t2)}), got {show(e.t1)}")
    if e.strike_window_turns < e.strikes:
        ctx.error(join_key(path, "strike_window_turns"),
                  f"must be >= strikes ({e.strikes}), got {e.strike_window_turns}")
    return e


def _post_housekeeping(
    rule: HousekeepingRule, raw: Mapping[str, Any], path: str, ctx: Ctx
) -> HousekeepingRule:
    if "name" in raw and not _NAME.fullmatch(rule.name):
        ctx.error(join_key(path, "name"),
                  f"must be letters, digits, '_', '.' or '-', got {show(rule.name)}")
    has_schema = bool(raw.get("output_schema_keys"))
    if not has_schema and ("system_prefix" not in raw or (
            isinstance(raw["system_prefix"], list) and not raw["system_prefix"])):
        ctx.error(join_key(path, "system_prefix"),
                  'must list at least one opening phrase, e.g. ["You are a title generator"] '
                  '(or set output_schema_keys)')
    for i, phrase in enumerate(rule.system_prefix):
        if not phrase.strip():
            ctx.error(f"{join_key(path, 'system_prefix')}[{i}]", "must not be empty")
    return rule


def _post_telemetry(
    t: TelemetryConfig, raw: Mapping[str, Any], path: str, ctx: Ctx
) -> TelemetryConfig:
    if t.otlp_endpoint and not re.match(r"https?://[^/\s]+", t.otlp_endpoint):
        ctx.error(join_key(path, "otlp_endpoint"),
                  f'must be an http:// or https:// URL (e.g. "http://127.0.0.1:4318"), '
                  f"got {show(redact_url(t.otlp_endpoint))}")
    if not t.service_name.strip():
        ctx.error(join_key(path, "service_name"), 'must not be empty; the default is "orca"')
    return t


def _post_config(cfg: Config, raw: Mapping[str, Any], path: str, ctx: Ctx) -> Config:
    """Defaults that depend on other tables, and names unique across an array."""
    routing = raw.get("routing")
    given = isinstance(routing, dict) and "side_router" in routing
    if not given and "background" in cfg.routers:
        cfg = dataclasses.replace(cfg, routing=dataclasses.replace(
            cfg.routing, side_router="orca/background"))
    first: dict[str, int] = {}
    for i, rule in enumerate(cfg.housekeeping if "housekeeping" in raw else ()):
        if rule.name in first:
            ctx.error(f"housekeeping[{i}].name", f'duplicate rule name "{rule.name}" '
                      f"(also housekeeping[{first[rule.name]}])")
        first.setdefault(rule.name, i)
    return cfg


def _post_router(r: RouterConfig, raw: Mapping[str, Any], path: str, ctx: Ctx) -> RouterConfig:
    if not _NAME.fullmatch(r.name):
        ctx.error(path,
                  f"router name must be letters, digits, '_', '.' or '-', got {show(r.name)}")
    if r.t1 >= r.t2:
        ctx.error(join_key(path, "t1"), f"must be less than t2 ({show(r.t2)}), got {show(r.t1)}")
    if len(r.fallbacks) > MAX_FALLBACKS:
        ctx.error(join_key(path, "fallbacks"),
                  f"must list at most {MAX_FALLBACKS} models, got {len(r.fallbacks)}")
    if not r.allowed_models:  # default: every model its bands name
        seen = dict.fromkeys(r.weak_pool + r.mid_pool + r.strong_pool + r.escalation.pool)
        r = dataclasses.replace(r, allowed_models=tuple(seen))
        if not r.allowed_models:
            ctx.error(join_key(path, "allowed_models"),
                      "must list at least one model (the router has none)")
    allowed = set(r.allowed_models)
    for band in ("weak_pool", "mid_pool", "strong_pool"):
        for i, m in enumerate(getattr(r, band)):
            if m not in allowed:
                ctx.error(f"{join_key(path, band)}[{i}]", f'"{m}" is not in allowed_models')
    return r


POST: dict[type, Callable[[Any, Mapping[str, Any], str, Ctx], Any]] = {
    ServerConfig: _post_server,
    StateConfig: _post_state,
    FaultConfig: _post_faults,
    ChannelConfig: _post_channel,
    EscalationConfig: _post_escalation,
    RouterConfig: _post_router,
    HousekeepingRule: _post_housekeeping,
    TelemetryConfig: _post_telemetry,
    AutoConfig: post_auto,
    RouteNode: post_route_node,
    RouteConfig: post_route,
    InboundKey: post_inbound_key,
    Config: _post_config,
}
