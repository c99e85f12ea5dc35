"""Find, read, interpolate and validate `orca.toml` (SPEC §2, §11).

    discover -> tomllib (binary) -> ${VAR} -> build (walk the schema dataclasses) -> ranges
    -> per-type defaults -> cross-references

The walk is driven by `dataclasses.fields` and the type hints of `schema.py`, so a field added
there is a known key with a known type here without another line. Every problem is a
`ConfigError(path, key, why)`; `validate_all` collects them all, `load` raises the first.
`check` adds SPEC §2's `config check` findings (escalation pool, per-format candidates) and
`redacted` gives the JSON-able effective config with no secret in it.

Only this module and `cli/` read the environment (STYLE §4.2 rule 11), and only through the
`environ` mapping they are given.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import ipaddress
import os
import re
import tomllib
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from orca_cli.config.auto import AutoConfig, post_auto, with_auto_router
from orca_cli.config.schema import (
    DEFAULT_API_BY_TYPE,
    DEFAULT_BASE_URL_BY_TYPE,
    DEFAULT_CACHE_TTL_BY_TYPE,
    UNMAPPED_CACHE_TTL_S,
    ChannelConfig,
    Config,
    EscalationConfig,
    FaultConfig,
    FeatureConfig,
    ModelConfig,
    RouterConfig,
    Secret,
    ServerConfig,
    StateConfig,
    WorkspaceConfig,
)
from orca_cli.errors import ConfigError

__all__ = [
    "ConfigIssue",
    "check",
    "discover",
    "is_loopback_host",
    "load",
    "loads",
    "parse",
    "redacted",
    "search_paths",
    "validate_all",
    "validate_doc",
]

MAX_FALLBACKS = 8
SUFFIXES = ("nitro", "cheap", "fast")

# ---------------------------------------------------------------------------------- discovery


def search_paths(environ: Mapping[str, str] = os.environ) -> list[tuple[str, str]]:
    """The places `discover` looks after `--config`, as (label, path), in order."""
    out: list[tuple[str, str]] = []
    if environ.get("ORCA_CONFIG"):
        out.append(("$ORCA_CONFIG", environ["ORCA_CONFIG"]))
    out.append(("./orca.toml", "orca.toml"))
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if not xdg or not os.path.isabs(xdg):  # the XDG spec ignores a relative value
        home = environ.get("HOME") or str(Path.home())
        xdg = os.path.join(home, ".config")
    out.append(("$XDG_CONFIG_HOME/orca/orca.toml", os.path.join(xdg, "orca", "orca.toml")))
    return out


def discover(path: str | None = None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The config file to read: `--config`, `$ORCA_CONFIG`, `./orca.toml`,
    `$XDG_CONFIG_HOME/orca/orca.toml` (default `~/.config`); None when there is none.

    A file named explicitly (flag or `$ORCA_CONFIG`) must exist: a typo there is an error,
    never a silent fall-back to another file or to the defaults."""
    if path:
        _must_exist(path, "given with --config")
        return path
    named = environ.get("ORCA_CONFIG")
    if named:
        _must_exist(named, "named by $ORCA_CONFIG")
        return named
    for _label, candidate in search_paths(environ):
        if os.path.isfile(candidate):
            return candidate
    return None


def _must_exist(path: str, how: str) -> None:
    if os.path.isdir(path):
        raise ConfigError(path, "", f"is a directory, not a config file ({how})")
    if not os.path.isfile(path):
        raise ConfigError(path, "", f"no such config file ({how}); create one with `orca init`")


# ------------------------------------------------------------------------------- entry points


def load(path: str | None = None, *, environ: Mapping[str, str] = os.environ) -> Config:
    """The effective config. No file found -> the built-in defaults `Config()`, whose
    `source` is None (that is how a caller knows). Raises the first `ConfigError`."""
    cfg, errors = validate_all(path, environ=environ)
    if errors:
        raise _first(errors)
    assert cfg is not None
    return cfg


def validate_all(
    path: str | None = None, *, environ: Mapping[str, str] = os.environ
) -> tuple[Config | None, list[ConfigError]]:
    """Like `load`, but returns every problem found instead of raising the first.
    The config is None when there were errors."""
    source = discover(path, environ)
    if source is None:
        return Config(), []
    try:
        with open(source, "rb") as fh:
            doc = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        return None, [ConfigError(source, "", f"is not valid TOML: {exc}")]
    except OSError as exc:
        return None, [ConfigError(source, "", f"cannot be read: {exc.strerror or exc}")]
    return validate_doc(doc, source=source, environ=environ)


def parse(
    doc: Mapping[str, Any], *, source: str | None = None, environ: Mapping[str, str] = os.environ
) -> Config:
    """Validate an already-parsed TOML document (e.g. a built-in reference config)."""
    cfg, errors = validate_doc(doc, source=source, environ=environ)
    if errors:
        raise _first(errors)
    assert cfg is not None
    return cfg


def loads(
    text: str, *, source: str | None = None, environ: Mapping[str, str] = os.environ
) -> Config:
    """Validate TOML text."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(source, "", f"is not valid TOML: {exc}") from None
    return parse(doc, source=source, environ=environ)


def _first(errors: list[ConfigError]) -> ConfigError:
    head = errors[0]
    if len(errors) == 1:
        return head
    more = len(errors) - 1
    return ConfigError(
        head.path, head.key, f"{head.why} (and {more} more; run `orca config check` to list all)"
    )


def validate_doc(
    doc: Mapping[str, Any], *, source: str | None = None, environ: Mapping[str, str] = os.environ
) -> tuple[Config | None, list[ConfigError]]:
    """Every problem of an already-parsed TOML document; the config is None when any."""
    ctx = _Ctx(source, environ, [])
    built = _build(Config, doc, "", ctx)
    assert isinstance(built, Config)
    cfg = with_auto_router(dataclasses.replace(built, source=source), ctx.error)
    _cross_check(cfg, ctx)
    return (None, ctx.errors) if ctx.errors else (cfg, [])


# ------------------------------------------------------------------------------- the walker

_DROP: Any = object()  # an unset ${VAR} inside a disabled channel: the value is dropped
_BAD: Any = object()  # the value was wrong (error recorded): the field keeps its default
_NOT_KEYS: dict[type, frozenset[str]] = {Config: frozenset({"source"})}
_VAR = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{")
_BARE = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(slots=True)
class _Ctx:
    source: str | None
    environ: Mapping[str, str]
    errors: list[ConfigError]
    lenient: bool = False  # inside a disabled channel

    def error(self, key: str, why: str) -> None:
        self.errors.append(ConfigError(self.source, key, why))


def _join(prefix: str, name: str) -> str:
    part = name if _BARE.fullmatch(name) else '"' + name.replace('"', '\\"') + '"'
    return f"{prefix}.{part}" if prefix else part


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _build(
    cls: type, raw: Mapping[str, Any], path: str, ctx: _Ctx, *, base: Any = None,
    implied: Mapping[str, Any] | None = None,
) -> Any:
    """One dataclass instance from one TOML table; unknown keys and bad values are recorded
    and the field keeps its default (or `base`'s value), so the walk reports everything."""
    implied = dict(implied or {})
    skip = _NOT_KEYS.get(cls, frozenset())
    fields = [f for f in dataclasses.fields(cls) if f.name not in skip]
    known = [f.name for f in fields if f.name not in implied]
    if "enabled" in known and raw.get("enabled") is False:
        ctx = dataclasses.replace(ctx, lenient=True)
    for key in raw:
        if key not in known:
            ctx.error(_join(path, key), _unknown_key(key, known))
    kwargs: dict[str, Any] = dict(implied)
    hints = _hints(cls)
    for f in fields:
        if f.name in kwargs:
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
        if f.name in raw:
            value = _convert(hints[f.name], raw[f.name], _join(path, f.name), ctx, default)
            if value is not _DROP and value is not _BAD:
                kwargs[f.name] = value
                continue
        if base is not None:
            kwargs[f.name] = getattr(base, f.name)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            if f.name not in raw:
                ctx.error(_join(path, f.name), "is required")
            kwargs[f.name] = _placeholder(hints[f.name])
    obj = cls(**kwargs)
    for name, rng in _RANGES.get(cls, {}).items():
        value = getattr(obj, name)
        if name in raw and not rng.holds(value):
            ctx.error(_join(path, name), f"{rng.describe()}, got {_show(value)}")
    post = _POST.get(cls)
    return post(obj, raw, path, ctx) if post else obj


def _convert(tp: Any, value: Any, path: str, ctx: _Ctx, default: Any = None) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is str or tp is Secret:
        s = _string(value, path, ctx)
        if tp is Secret and isinstance(s, str):
            if s == "" and isinstance(value, str) and "${" in value:
                return _DROP  # "${KEY_2:-}": an optional key that is not set
            if s == "" and not ctx.lenient:
                return _bad(ctx, path, "must not be empty")
            return Secret(s) if s else _DROP
        return s
    if tp is bool:
        return value if isinstance(value, bool) else _wrong(ctx, path, "true or false", value)
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return value if ok else _wrong(ctx, path, "an integer", value)
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return float(value) if ok else _wrong(ctx, path, "a number", value)
    if origin is Literal:
        s = _string(value, path, ctx)
        if s is _DROP or s is _BAD:
            return s
        if s not in args:
            allowed = ", ".join(f'"{a}"' for a in args)
            return _bad(ctx, path, f"must be one of {allowed}, got {_show(s)}")
        return s
    if origin is tuple:
        item_tp = args[0]
        if not isinstance(value, list):
            want = "an array of tables" if dataclasses.is_dataclass(item_tp) else "an array"
            return _wrong(ctx, path, want, value)
        items = (_convert(item_tp, v, f"{path}[{i}]", ctx) for i, v in enumerate(value))
        return tuple(v for v in items if v is not _DROP and v is not _BAD)
    if origin is dict:
        if not isinstance(value, dict):
            return _wrong(ctx, path, "a table", value)
        out = {}
        for key, item in value.items():
            v = _convert_entry(args[1], key, item, _join(path, key), ctx)
            if v is not _DROP and v is not _BAD:
                out[key] = v
        return out
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            return _wrong(ctx, path, "a table", value)
        return _build(tp, value, path, ctx, base=default)
    raise TypeError(f"config schema type {tp!r} at {path} has no loader")  # a schema bug


def _convert_entry(tp: Any, key: str, value: Any, path: str, ctx: _Ctx) -> Any:
    """A value of a `dict[str, X]` table; a dataclass with a required `name` takes the key."""
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            return _wrong(ctx, path, "a table", value)
        names = {f.name for f in dataclasses.fields(tp) if f.default is dataclasses.MISSING}
        return _build(tp, value, path, ctx, implied={"name": key} if "name" in names else None)
    return _convert(tp, value, path, ctx)


def _string(value: Any, path: str, ctx: _Ctx) -> Any:
    """`${VAR}` and `${VAR:-default}` expanded from `environ`; `$${` is a literal `${`."""
    if not isinstance(value, str):
        return _wrong(ctx, path, "a string", value)
    problems: list[str] = []

    def expand(m: re.Match[str]) -> str:
        text = m.group(0)
        if text == "$${":
            return "${"
        name, fallback = m.group(1), m.group(2)
        if name is None:
            problems.append("has a malformed ${...}; write ${NAME} or ${NAME:-default}")
            return text
        got = ctx.environ.get(name)
        if fallback is not None and not got:
            return fallback
        if got is None:
            problems.append(
                f"environment variable {name} is not set; export it, or write "
                f"${{{name}:-default}} to give a default"
            )
            return text
        return got

    out = _VAR.sub(expand, value)
    if not problems:
        return out
    if ctx.lenient and all("not set" in p for p in problems):
        return _DROP
    return _bad(ctx, path, problems[0])


def _placeholder(tp: Any) -> Any:
    return {str: "", int: 0, float: 0.0, bool: False}.get(tp, "")


def _bad(ctx: _Ctx, path: str, why: str) -> Any:
    ctx.error(path, why)
    return _BAD


def _wrong(ctx: _Ctx, path: str, expected: str, value: Any) -> Any:
    return _bad(ctx, path, f"must be {expected}, got {_show(value)} ({_toml_type(value)})")


def _unknown_key(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return f"unknown key; did you mean `{close[0]}`?"
    return "unknown key; valid keys here: " + ", ".join(known)


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list | tuple):
        return "an array"
    return str(value)


def _toml_type(value: Any) -> str:
    kinds: list[tuple[type | tuple[type, ...], str]] = [
        (bool, "a boolean"), (str, "a string"), (int, "an integer"), (float, "a float"),
        ((list, tuple), "an array"), (dict, "a table"),
    ]
    for kind, label in kinds:
        if isinstance(value, kind):
            return label
    return "a date/time"


# ------------------------------------------------------------------------------------ ranges


@dataclass(frozen=True, slots=True)
class _Range:
    lo: float
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False

    def holds(self, v: float) -> bool:
        above = v > self.lo if self.lo_open else v >= self.lo
        if self.hi is None:
            return above
        return above and (v < self.hi if self.hi_open else v <= self.hi)

    def describe(self) -> str:
        lo = _show(float(self.lo))
        if self.hi is None:
            return f"must be {'>' if self.lo_open else '>='} {lo}"
        hi = _show(float(self.hi))
        return f"must be in {'(' if self.lo_open else '['}{lo}, {hi}{')' if self.hi_open else ']'}"


_POS, _NONNEG, _ONE_UP = _Range(0, lo_open=True), _Range(0), _Range(1)
_UNIT, _SHARE, _OPEN_UNIT = _Range(0, 1), _Range(0, 1, lo_open=True), _Range(0, 1, True, True)
_RANGES: dict[type, dict[str, _Range]] = {
    ServerConfig: {
        "port": _Range(1, 65535), "max_body_mb": _POS, "connect_timeout_s": _POS,
        "first_byte_timeout_s": _POS, "idle_timeout_s": _POS, "total_timeout_s": _POS,
        "header_timeout_s": _POS, "max_concurrency": _ONE_UP, "trace_max": _ONE_UP,
        "trace_ttl_s": _POS,
    },
    StateConfig: {"timeout_ms": _POS},
    FaultConfig: {"rate": _UNIT, "after_bytes": _NONNEG, "stall_s": _NONNEG},
    ChannelConfig: {
        "weight": _NONNEG, "cache_ttl_s": _POS, "latency_ms": _NONNEG,
        "expected_latency_ms": _NONNEG, "expected_tps": _NONNEG,
    },
    ModelConfig: {
        "input": _NONNEG, "output": _NONNEG, "cache_read": _NONNEG, "cache_write": _NONNEG,
        "quality": _UNIT, "context_window": _ONE_UP,
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
}

# ----------------------------------------------------------------- per-table rules and defaults

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def is_loopback_host(host: str) -> bool:
    """True for `localhost`, `*.localhost`, 127.0.0.0/8 and ::1 (SPEC §11)."""
    h = host.strip().strip("[]").lower()
    if h == "localhost" or h.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def _post_server(s: ServerConfig, raw: Mapping[str, Any], path: str, ctx: _Ctx) -> ServerConfig:
    if not s.host:
        ctx.error(_join(path, "host"), 'must not be empty; the default is "127.0.0.1"')
    elif not is_loopback_host(s.host) and not s.inbound_token:
        ctx.error(
            _join(path, "inbound_token"),
            f'is required when server.host is not loopback (host = "{s.host}"); set it, '
            'e.g. inbound_token = "${ORCA_INBOUND_TOKEN}"',
        )
    for i, origin in enumerate(s.allowed_origins):
        if not re.fullmatch(r"https?://[^/\s]+", origin):
            ctx.error(f"{_join(path, 'allowed_origins')}[{i}]",
                      f'must be an origin like "https://example.com", got {_show(origin)}')
    return s


def _post_state(s: StateConfig, raw: Mapping[str, Any], path: str, ctx: _Ctx) -> StateConfig:
    if not s.key_prefix or any(c in s.key_prefix for c in "{} "):
        ctx.error(_join(path, "key_prefix"),
                  f"must be non-empty without braces or spaces, got {_show(s.key_prefix)}")
    if urlsplit(s.redis_url).scheme not in ("redis", "rediss", "unix"):
        shown = _show(_redact_url(s.redis_url))
        ctx.error(_join(path, "redis_url"),
                  f"must be a redis://, rediss:// or unix:// URL, got {shown}")
    for i, hp in enumerate(s.sentinels):
        host, _, port = hp.rpartition(":")
        if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            ctx.error(f"{_join(path, 'sentinels')}[{i}]", f'must be "host:port", got {_show(hp)}')
    if s.backend == "redis" and s.redis_mode == "sentinel" and not s.sentinels:
        ctx.error(_join(path, "sentinels"),
                  'must list at least one "host:port" when redis_mode = "sentinel"')
    return s


def _post_faults(f: FaultConfig, raw: Mapping[str, Any], path: str, ctx: _Ctx) -> FaultConfig:
    if f.status != 0 and not 100 <= f.status <= 599:
        ctx.error(_join(path, "status"),
                  f"must be 0 (off) or an HTTP status in [100, 599], got {f.status}")
    return f


def _post_channel(ch: ChannelConfig, raw: Mapping[str, Any], path: str, ctx: _Ctx) -> ChannelConfig:
    """Per-type defaults (api, base_url, cache window) and the channel's own rules."""
    api = ch.api if "api" in raw else DEFAULT_API_BY_TYPE.get(ch.type, "openai")
    base_url = ch.base_url or DEFAULT_BASE_URL_BY_TYPE.get(ch.type, "")
    ttl = ch.cache_ttl_s
    if "cache_ttl_s" not in raw:
        ttl = DEFAULT_CACHE_TTL_BY_TYPE.get(ch.type, UNMAPPED_CACHE_TTL_S)
    ch = dataclasses.replace(ch, api=api, base_url=base_url, cache_ttl_s=ttl)
    if "name" in raw and not _NAME.fullmatch(ch.name):
        ctx.error(_join(path, "name"),
                  f"must be letters, digits, '_', '.' or '-' (no ':'), got {_show(ch.name)}")
    if ch.type != "sim":
        sim_only = {"latency_ms": ch.latency_ms != 0, "faults": ch.faults != FaultConfig()}
        for key, used in sim_only.items():
            if used:
                ctx.error(_join(path, key),
                          f'is for type = "sim" channels only (type = "{ch.type}")')
        if base_url and not re.match(r"https?://", base_url):
            ctx.error(_join(path, "base_url"),
                      f"must be an http:// or https:// URL, got {_show(base_url)}")
        if not base_url and ch.enabled:
            ctx.error(_join(path, "base_url"), f'is required for type = "{ch.type}"')
    for model in ch.model_map:
        if model not in ch.models:
            ctx.error(_join(_join(path, "model_map"), model),
                      "maps a model this channel does not list in `models`")
    return ch


def _post_escalation(
    e: EscalationConfig, raw: Mapping[str, Any], path: str, ctx: _Ctx
) -> EscalationConfig:
    if e.t1 >= e.t2:
        ctx.error(_join(path, "t1"), f"must be less than t2 ({_show(e.t2)}), got {_show(e.t1)}")
    if e.strike_window_turns < e.strikes:
        ctx.error(_join(path, "strike_window_turns"),
                  f"must be >= strikes ({e.strikes}), got {e.strike_window_turns}")
    return e


def _post_router(r: RouterConfig, raw: Mapping[str, Any], path: str, ctx: _Ctx) -> RouterConfig:
    if not _NAME.fullmatch(r.name):
        ctx.error(path,
                  f"router name must be letters, digits, '_', '.' or '-', got {_show(r.name)}")
    if r.t1 >= r.t2:
        ctx.error(_join(path, "t1"), f"must be less than t2 ({_show(r.t2)}), got {_show(r.t1)}")
    if len(r.fallbacks) > MAX_FALLBACKS:
        ctx.error(_join(path, "fallbacks"),
                  f"must list at most {MAX_FALLBACKS} models, got {len(r.fallbacks)}")
    if not r.allowed_models:  # default: every model its bands name
        seen = dict.fromkeys(r.weak_pool + r.mid_pool + r.strong_pool + r.escalation.pool)
        r = dataclasses.replace(r, allowed_models=tuple(seen))
        if not r.allowed_models:
            ctx.error(_join(path, "allowed_models"),
                      "must list at least one model (the router has none)")
    allowed = set(r.allowed_models)
    for band in ("weak_pool", "mid_pool", "strong_pool"):
        for i, m in enumerate(getattr(r, band)):
            if m not in allowed:
                ctx.error(f"{_join(path, band)}[{i}]", f'"{m}" is not in allowed_models')
    return r


_POST: dict[type, Callable[[Any, Mapping[str, Any], str, _Ctx], Any]] = {
    ServerConfig: _post_server,
    StateConfig: _post_state,
    FaultConfig: _post_faults,
    ChannelConfig: _post_channel,
    EscalationConfig: _post_escalation,
    RouterConfig: _post_router,
    AutoConfig: post_auto,
}

# ---------------------------------------------------------------------------- cross-references


def _known_models(cfg: Config) -> list[str]:
    seen = dict.fromkeys(m for ch in cfg.channels for m in ch.models)
    seen.update(dict.fromkeys(cfg.models))
    return list(seen)


def _cross_check(cfg: Config, ctx: _Ctx) -> None:
    """Names that must point at something: channel names, router pools, aliases."""
    first: dict[str, int] = {}
    for i, ch in enumerate(cfg.channels):
        if ch.name in first:
            ctx.error(f"channels[{i}].name",
                      f'duplicate channel name "{ch.name}" (also channels[{first[ch.name]}])')
        first.setdefault(ch.name, i)
    if any(e.key.startswith("channels[") and ".models" in e.key for e in ctx.errors):
        return  # a broken `models` list would make every router's models look unknown
    known = _known_models(cfg)
    known_set = set(known)
    for name, r in cfg.routers.items():
        rpath = _join("routers", name)
        if name in known_set:
            ctx.error(rpath, f'router name "{name}" is also a model id; rename the router')
        elsewhere = set(r.weak_pool + r.mid_pool + r.strong_pool + r.escalation.pool)
        lists = {  # a model is reported once, where it was written
            "allowed_models": [m for m in r.allowed_models if m not in elsewhere],
            "weak_pool": r.weak_pool, "mid_pool": r.mid_pool, "strong_pool": r.strong_pool,
            "fallbacks": r.fallbacks, "escalation.pool": r.escalation.pool,
        }
        for key, models in lists.items():
            full = getattr(r, key) if "." not in key else r.escalation.pool
            for m in models:
                if m not in known_set:
                    ctx.error(f"{rpath}.{key}[{list(full).index(m)}]", _unknown_model(m, known))
    for pattern, target in cfg.aliases.items():
        why = _alias_problem(cfg, target, known_set)
        if why:
            ctx.error(_join("aliases", pattern), why)


def _unknown_model(model: str, known: list[str]) -> str:
    close = difflib.get_close_matches(model, known, n=1, cutoff=0.6)
    hint = f'did you mean "{close[0]}"? ' if close else ""
    return (f'unknown model "{model}"; {hint}a model must be listed in some channel\'s '
            "`models` or have a [models] table")


def _alias_problem(cfg: Config, target: str, known: set[str]) -> str | None:
    if target.startswith("orca/"):
        if target[5:] in cfg.routers:
            return None
        return f'target "{target}" names no router; routers: {", ".join(cfg.routers) or "none"}'
    if target in cfg.routers or target in known:
        return None
    parts = target.split(":")
    if len(parts) > 1 and parts[-1] in SUFFIXES:
        parts = parts[:-1]
    ch = cfg.channel(parts[0]) if len(parts) > 1 else None
    if ch is not None and ":".join(parts[1:]) in ch.models:
        return None
    if ":".join(parts) in known:
        return None
    return f'target "{target}" is not orca/<router>, a router name or a known model'


# ------------------------------------------------------------------------------ config check


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """A `config check` finding beyond load-time validation (SPEC §2)."""

    severity: Literal["error", "warning"]
    key: str
    why: str
    source: str | None = None

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source else ""
        return f"{where}{self.key}: {self.why}"


def check(cfg: Config) -> list[ConfigIssue]:
    """SPEC §2's extra checks: an escalation that cannot escalate is an error; a router tier
    with no candidate for an inbound format, and a few likely mistakes, are warnings."""
    out: list[ConfigIssue] = []

    def add(sev: Literal["error", "warning"], key: str, why: str) -> None:
        out.append(ConfigIssue(sev, key, why, cfg.source))

    known = set(_known_models(cfg))
    enabled_by_api: dict[str, set[str]] = {"openai": set(), "anthropic": set()}
    served: set[str] = set()
    for ch in cfg.enabled_channels():
        enabled_by_api.setdefault(ch.api, set()).update(ch.models)
        served.update(ch.models)
    for name, r in cfg.routers.items():
        rpath = _join("routers", name)
        esc = r.escalation
        tiers = {"base": r.base_pool}
        if esc.mode != "off":
            pool = r.escalation_pool
            unknown = [m for m in pool if m not in known]
            if not pool:
                add("error", f"{rpath}.escalation.pool",
                    f'escalation mode is "{esc.mode}" but the escalation pool is empty (pool and '
                    'strong_pool are both empty); list models in strong_pool, or set mode = "off"')
            elif unknown:
                add("error", f"{rpath}.escalation.pool", _unknown_model(unknown[0], sorted(known)))
            tiers["strong"] = pool
        for tier, models in tiers.items():
            for api in ("openai", "anthropic"):
                if not any(m in enabled_by_api[api] for m in models):
                    add("warning", rpath,
                        f'the {tier} tier has no model served by an enabled channel with api = '
                        f'"{api}"; {api}-format requests to this router cannot be served {tier}')
        for m in r.allowed_models + r.escalation_pool:
            if m in known and m not in served:
                add("warning", rpath, f'model "{m}" is served by no enabled channel')
    for i, ch in enumerate(cfg.channels):
        keyless_ok = ch.pass_through_auth or ch.type in ("sim", "openai-compatible")
        if ch.enabled and not ch.keys and not keyless_ok:
            add("warning", f"channels[{i}].keys", f'channel "{ch.name}" is enabled but has no keys')
    for m in sorted(served - set(cfg.models)):
        add("warning", _join("models", m), "has no [models] table: its cost counts as 0")
    features = dataclasses.fields(cfg.difficulty)
    total = sum(getattr(cfg.difficulty, f.name).weight for f in features)
    if total > 1 + 1e-9:
        add("warning", "difficulty", f"feature weights sum to {total:.3f} > 1: scores can exceed 1")
    return out


# ---------------------------------------------------------------------------------- redaction


def redacted(cfg: Config) -> dict[str, Any]:
    """The whole effective config as plain JSON-able data with every secret replaced by its
    fingerprint (SPEC §11): channel keys, `server.inbound_token`, URL passwords."""
    out = _plain(cfg, "")
    assert isinstance(out, dict)
    return out


def _fingerprint(value: str) -> dict[str, Any]:
    return {"fp": hashlib.sha256(value.encode()).hexdigest()[:8], "redacted": True}


def _plain(value: Any, name: str) -> Any:
    if isinstance(value, Secret):
        return {"fp": value.fp, "redacted": True}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name), f.name) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v, name) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v, name) for k, v in value.items()}
    if name == "inbound_token" and value:
        return _fingerprint(str(value))
    if name in ("redis_url", "base_url") and isinstance(value, str):
        return _redact_url(value)
    return value


def _redact_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
