"""The config contract of SPEC §2 as frozen dataclasses.

Every default here is the SPEC §2 default. Names are a contract: add keys, never rename.
The loader (`load.py`) validates a TOML document against these classes field by field,
so a field added here is automatically a known key with a known type.
"""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass, field
from typing import Literal

from orca_cli.config.auto import AutoConfig
from orca_cli.config.compiled import CompiledConfig
from orca_cli.config.housekeeping import DEFAULT_HOUSEKEEPING, HousekeepingRule
from orca_cli.config.routes import BudgetsConfig, InboundKey, RouteConfig
from orca_cli.immutable import immutable
from orca_cli.types import Api

__all__ = [
    "CHANNEL_TYPES",
    "DEFAULT_API_BY_TYPE",
    "DEFAULT_BASE_URL_BY_TYPE",
    "DEFAULT_CACHE_TTL_BY_TYPE",
    "ChannelConfig",
    "ChannelPrice",
    "Config",
    "DifficultyConfig",
    "EscalationConfig",
    "FaultConfig",
    "FeatureConfig",
    "HousekeepingRule",
    "ModelConfig",
    "RouterConfig",
    "RoutingConfig",
    "Secret",
    "ServerConfig",
    "StateConfig",
    "TelemetryConfig",
    "TranslationConfig",
    "WorkspaceConfig",
]

ChannelType = Literal[
    "openai", "anthropic", "deepseek", "gemini", "openrouter", "openai-compatible", "sim"
]

CHANNEL_TYPES: tuple[str, ...] = (
    "openai",
    "anthropic",
    "deepseek",
    "gemini",
    "openrouter",
    "openai-compatible",
    "sim",
)
# A channel with no `api` written speaks this one format. `sim` included: it speaks exactly
# the formats in its `api`, like a real channel (SPEC §13.2), so a sim channel with no `api`
# is an OpenAI-format (Chat Completions) provider and other formats reach it translated.
DEFAULT_API_BY_TYPE: dict[str, Api] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "deepseek": "openai",
    "gemini": "openai",
    "openrouter": "openai",
    "openai-compatible": "openai",
    "sim": "openai",
}
# Provider prompt-cache windows (SPEC §5): the channel pin lives exactly this long.
DEFAULT_CACHE_TTL_BY_TYPE: dict[str, int] = {
    "openai": 300,
    "anthropic": 300,
    "gemini": 300,
    "deepseek": 3600,
}
UNMAPPED_CACHE_TTL_S = 300
DEFAULT_BASE_URL_BY_TYPE: dict[str, str] = {
    "openai": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
    "deepseek": "https://api.deepseek.com",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/openai",
    "openrouter": "https://openrouter.ai/api",
    "openai-compatible": "",
    "sim": "sim://local",
}


class Secret:
    """An API key. Its value is reachable only through `.reveal()`; everything else sees the
    fingerprint (first 8 hex chars of its sha256, SPEC §5)."""

    __slots__ = ("_value", "fp")

    def __init__(self, value: str) -> None:
        self._value = value
        self.fp = hashlib.sha256(value.encode()).hexdigest()[:8]

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret(fp={self.fp})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self.fp)


@immutable
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8787
    max_body_mb: float = 32
    connect_timeout_s: float = 10
    first_byte_timeout_s: float = 120
    idle_timeout_s: float = 300
    total_timeout_s: float = 900
    header_timeout_s: float = 10
    # An idle keep-alive connection is closed after this many seconds: longer than the common
    # clients' own idle expiry (httpx 5 s, Node's undici 4 s), so the client closes first and
    # never sends a request on a connection the server is closing at that moment.
    keep_alive_s: int = 75
    max_concurrency: int = 256
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    inbound_token: str = ""
    trace_max: int = 20000
    trace_ttl_s: int = 86400
    # The `model` a response names for a router or alias target: the name the client sent
    # ("requested") or the model that served it ("served"). A concrete model is always itself.
    response_model: Literal["requested", "served"] = "requested"
    max_response_mb: float = 64  # a non-stream upstream body larger than this fails (502)

    @property
    def max_response_bytes(self) -> int:
        """The most of a whole (non-stream) upstream answer orca reads and holds."""
        return int(self.max_response_mb * 1_048_576)


@immutable
class StateConfig:
    backend: Literal["memory", "redis"] = "memory"
    redis_mode: Literal["single", "cluster", "sentinel"] = "single"
    redis_url: str = "redis://127.0.0.1:6379/0"
    sentinels: tuple[str, ...] = ()
    sentinel_service: str = "mymaster"
    key_prefix: str = "orca"
    timeout_ms: int = 250


@immutable
class FaultConfig:
    """sim only: answer `status` on a `rate` fraction of requests (deterministic per request)."""

    status: int = 0
    rate: float = 0.0
    # Extra fault kinds for tests and demos; all default off.
    after_bytes: int = 0  # > 0: drop the connection after this many body bytes of a stream
    stall_s: float = 0.0  # sleep this long before the first byte
    finish_reason: str = ""  # e.g. "error": answer 200 but end with this finish reason


@immutable
class ChannelPrice:
    """A model's price on one channel (SPEC §20); an unset figure keeps the model's own."""

    input: float | None = None  # $ per 1M input tokens
    output: float | None = None  # $ per 1M output tokens
    cache_read: float | None = None  # multiplier on the input price for a cached read
    cache_write: float | None = None  # multiplier on the input price for a cache write


@immutable
class ChannelConfig:
    """One upstream account. `api` is the format requests are translated to; `apis` every
    format the channel speaks, `api` first (TOML: `api = "openai"` or
    `api = ["responses", "openai"]`). In code, give `api` (and `apis` for several formats):
    `apis` is normalised to start with `api`, and to `(api,)` when it does not list it."""

    name: str
    type: ChannelType = "openai"
    # The loader fills the per-type default when the key is absent; TOML accepts one format or
    # an array of them (`toml_type`), the first being the translation target.
    api: Api = field(default="openai", metadata={"toml_type": Api | tuple[Api, ...]})
    base_url: str = ""  # the loader fills the per-type default when empty
    keys: tuple[Secret, ...] = ()
    weight: float = 1
    enabled: bool = True
    models: tuple[str, ...] = ()
    model_map: dict[str, str] = field(default_factory=dict)
    cache_ttl_s: int = UNMAPPED_CACHE_TTL_S  # the loader fills the per-type default
    pass_through_auth: bool = False
    latency_ms: float = 0  # sim only
    faults: FaultConfig = field(default_factory=FaultConfig)  # sim only
    # Observed latency / throughput hints for the `latency` / `throughput` modes (lower / higher
    # is better). Optional; without them the ordering falls back to weight.
    expected_latency_ms: float = 0
    expected_tps: float = 0
    # SPEC §20: this channel's own price of a model, overriding its `[models]` table (each
    # figure unset keeps the model's); read through `routing.modes.channel_price`.
    prices: dict[str, ChannelPrice] = field(default_factory=dict)
    # Every format the channel speaks, `api` first; filled from `api` (not a TOML key).
    apis: tuple[Api, ...] = field(default=(), metadata={"derived": True, "shown": False})

    def __post_init__(self) -> None:
        if not isinstance(self.api, str):
            return  # the loader's intermediate value (an array); its rule normalises it
        if self.api not in self.apis:
            object.__setattr__(self, "apis", (self.api,))
        elif self.apis[0] != self.api:
            object.__setattr__(self, "apis", (self.api, *(a for a in self.apis if a != self.api)))

    def upstream_model(self, model: str) -> str:
        return self.model_map.get(model, model)

    def accepts(self, api: str) -> bool:
        """Whether the channel serves requests of this inbound wire format natively: the
        formats in its `api`, for a `sim` channel too (SPEC §13.2)."""
        return api in self.apis


@immutable
class ModelConfig:
    input: float = 0.0  # $ per 1M input tokens
    output: float = 0.0  # $ per 1M output tokens
    cache_read: float = 0.1  # multiplier on the input price for a cached read
    cache_write: float = 1.0  # multiplier on the input price for a cache write
    quality: float = 0.5
    context_window: int = 128000
    quality_by_workload: dict[str, float] = field(default_factory=dict)  # SPEC §16
    # What translation needs to know of the model (SPEC §13.2): whether it is a reasoning
    # model (effort is sent to it, sampling parameters are not; unset: judged by its id, see
    # `translate.policy.is_reasoning_model`) and the most output tokens it may be asked for.
    reasoning: bool | None = None
    max_output_tokens: int | None = None
    # Whether the model reads images (and PDFs, whose pages providers read as images). A
    # request that carries one (in a message or a tool result) excludes a model with
    # `vision = false` (reason `vision`): DeepSeek's chat models answer it 400 ("unknown
    # variant `image_url`"), and a session pinned there would fail on every later turn,
    # since the history carries the image on.
    vision: bool = True
    # The multiplier on every price of a request the provider served in fast mode, as its
    # answer reports it: Anthropic's `usage.speed: "fast"` (2.0 on Opus 5, Anthropic's pricing
    # page), OpenAI's `service_tier` "priority" or "fast".
    fast: float = 1.0


@immutable
class EscalationConfig:
    mode: Literal["off", "shadow", "auto"] = "auto"
    pool: tuple[str, ...] = ()
    threshold: Literal["absolute", "percentile"] = "absolute"
    t2: float = 0.55
    t1: float = 0.35
    percentile: float = 0.90
    streak: int = 2
    strikes: int = 2
    strike_window_turns: int = 6
    max_per_session: int = 1
    share_cap: float = 0.20
    share_window_h: int = 24
    warmup_requests: int = 20
    canary: float = 1.0
    tier_ttl_s: int = 14400
    clean_turns: int = 3


@immutable
class RouterConfig:
    name: str
    strategy: Literal[
        "cheapest", "quality", "balanced", "linucb", "gated_adaptive", "auto"
    ] = (
        "gated_adaptive"
    )
    mode: Literal["balanced", "price", "latency", "throughput"] = "balanced"
    session_aware: bool = True
    allowed_models: tuple[str, ...] = ()
    weak_pool: tuple[str, ...] = ()
    mid_pool: tuple[str, ...] = ()
    strong_pool: tuple[str, ...] = ()
    fallbacks: tuple[str, ...] = ()
    t1: float = 0.35
    t2: float = 0.70
    linucb_alpha: float = 1.0
    linucb_cost_weight: float = 0.5
    # SPEC §20: the channels this router may use, by channel name or channel `type`
    # (case-insensitive); empty allows every channel. `providers_ignore` removes some.
    providers_allow: tuple[str, ...] = ()
    providers_ignore: tuple[str, ...] = ()
    escalation: EscalationConfig = field(default_factory=EscalationConfig)

    @property
    def escalation_pool(self) -> tuple[str, ...]:
        """The strong tier (SPEC §6.1): `escalation.pool`, default the router's strong_pool."""
        return self.escalation.pool or self.strong_pool

    @property
    def base_pool(self) -> tuple[str, ...]:
        """Allowed models minus the strong tier; a model in both belongs to strong."""
        strong = set(self.escalation_pool)
        return tuple(m for m in self.allowed_models if m not in strong)


@immutable
class WorkspaceConfig:
    share_cap: float = 0.20


@immutable
class FeatureConfig:
    weight: float
    cap: float


@immutable
class DifficultyConfig:
    """SPEC §4: Score = Σ weight · min(feature, cap) / cap."""

    log_prompt_tokens: FeatureConfig = field(
        default_factory=lambda: FeatureConfig(0.20, math.log(8001))
    )
    reasoning_cue_count: FeatureConfig = field(default_factory=lambda: FeatureConfig(0.15, 5.0))
    system_prompt_log_len: FeatureConfig = field(
        default_factory=lambda: FeatureConfig(0.10, math.log(2001))
    )
    code_keyword_density: FeatureConfig = field(default_factory=lambda: FeatureConfig(0.20, 5.0))
    has_tools: FeatureConfig = field(default_factory=lambda: FeatureConfig(0.15, 1.0))
    math_marker_count: FeatureConfig = field(default_factory=lambda: FeatureConfig(0.20, 5.0))


@immutable
class RoutingConfig:
    """`[routing]`: request-level routing settings (SPEC §14.1).

    `side_router`: where side requests (housekeeping, see `[[housekeeping]]`) go, as
    "orca/<router>" or a router name. The loader's default is "orca/background" when a router
    named `background` exists, else "" — the session's base pin, read-only."""

    side_router: str = ""


@immutable
class TelemetryConfig:
    """`[telemetry]`: OpenTelemetry export (SPEC §17); off while `otlp_endpoint` is empty."""

    otlp_endpoint: str = ""
    service_name: str = "orca"


@immutable
class TranslationConfig:
    """`[translation]`: serving a request through a channel of another wire format (§13.2)."""

    enabled: bool = True
    anthropic_cache: Literal["auto", "off"] = "auto"
    foreign_reasoning: Literal["drop", "as_text"] = "drop"


@dataclass(frozen=True)
class Config:
    """The whole effective config. Frozen; the indices the request path reads are built once
    per object (`compiled`, see `compiled.py`), so `channel()` and friends are O(1).

    Not `slots=True`: `compiled` is a `cached_property`, which keeps its value in the
    instance `__dict__` (a frozen dataclass still allows that)."""

    server: ServerConfig = field(default_factory=ServerConfig)
    state: StateConfig = field(default_factory=StateConfig)
    channels: tuple[ChannelConfig, ...] = ()
    models: dict[str, ModelConfig] = field(default_factory=dict)
    routers: dict[str, RouterConfig] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    workspace: WorkspaceConfig = field(default_factory=WorkspaceConfig)
    difficulty: DifficultyConfig = field(default_factory=DifficultyConfig)
    auto: AutoConfig = field(default_factory=AutoConfig)  # SPEC §16
    routing: RoutingConfig = field(default_factory=RoutingConfig)
    # The effective side-request rules: the shipped defaults unless the file has its own
    # `[[housekeeping]]` (which replace them all; `housekeeping = []` turns detection off).
    housekeeping: tuple[HousekeepingRule, ...] = DEFAULT_HOUSEKEEPING
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)
    translation: TranslationConfig = field(default_factory=TranslationConfig)
    # SPEC §17: team tokens (hashed at load), dynamic routes, $ budgets (`config/routes.py`).
    inbound_keys: tuple[InboundKey, ...] = ()
    routes: tuple[RouteConfig, ...] = ()
    budgets: BudgetsConfig = field(default_factory=BudgetsConfig)
    # The file this config came from (None for a built-in config); not a TOML key.
    source: str | None = field(default=None, metadata={"derived": True})

    @functools.cached_property
    def compiled(self) -> CompiledConfig:
        """The request path's indices of this config, built on first use (`load` builds them)."""
        return CompiledConfig(self)

    def channel(self, name: str) -> ChannelConfig | None:
        return self.compiled.channel_index.get(name)

    def enabled_channels(self) -> tuple[ChannelConfig, ...]:
        return self.compiled.enabled_channels

    def model_ids(self) -> tuple[str, ...]:
        """Every concrete model some enabled channel serves, in config order."""
        return self.compiled.model_ids

    def strong_models(self) -> frozenset[str]:
        """Models in any router's strong tier: served directly they count as strong (§1.3)."""
        return self.compiled.strong_models
