"""The `[auto]` table: the auto router's workspace policy (SPEC §16).

    [auto]
    objective = "balanced"          # balanced | quality | cost | latency
    spend_profile = "standard"      # economy | standard | premium | any (the default)
    # max_input = 0.5               # custom hard caps, $ per 1M tokens (override the profile)
    # max_output = 2.0
    models = ["anthropic/*", "openai/gpt-5*", "deepseek-chat"]   # default: every model
    fallbacks = true                # try the rest of the ranking on 429/5xx
    classifier = "local"            # "local" or a model id (a pinned cheap model)
    classifier_timeout_ms = 1500
    capability_margin = 0.1

A request cannot change any of it. `models` patterns are shell globs (`fnmatch`, case
sensitive) matched against both `<channel>/<model>` for every enabled channel serving the
model and the bare model id, so `anthropic/*` means "served by the channel named anthropic"
and `gpt-5*` means the model id.

The router `orca/auto`: when the `[auto]` table is present (and `enabled` is not false) and
the config defines no `[routers.auto]`, the loader adds an implicit router named `auto` with
`strategy = "auto"` (`with_auto_router`). Its `allowed_models` are every model with a
`[models.X]` table (a known price) that an enabled channel serves, that matches the patterns
and that is within the price caps, in config order. Its strong tier (SPEC §6) is the highest
quality band: the eligible models whose `quality` is within `capability_margin` of the best
one, held back for escalation as any router's strong pool is — but only when that leaves at
least one model for the base tier; otherwise the router has no strong tier and escalation is
off. A config that wants other pools writes `[routers.auto]` with `strategy = "auto"` itself;
the `[auto]` policy (caps, patterns, objective) still applies to it inside the strategy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Literal, Protocol

from orca_cli.config.compiled import price_on
from orca_cli.immutable import immutable

if TYPE_CHECKING:
    from orca_cli.config.schema import Config

__all__ = [
    "AUTO_ROUTER",
    "OBJECTIVES",
    "SPEND_PROFILES",
    "WORKLOADS",
    "AutoConfig",
    "auto_models",
    "channel_gate",
    "known_price",
    "matches_patterns",
    "post_auto",
    "price_caps",
    "strong_band",
    "with_auto_router",
]

AUTO_ROUTER = "auto"
Objective = Literal["balanced", "quality", "cost", "latency"]
SpendProfile = Literal["economy", "standard", "premium", "any"]
OBJECTIVES: tuple[str, ...] = ("balanced", "quality", "cost", "latency")
# Hard caps in $ per 1M tokens (input, output); None = no cap.
SPEND_PROFILES: dict[str, tuple[float | None, float | None]] = {
    "economy": (0.10, 0.50),
    "standard": (0.30, 1.50),
    "premium": (1.0, 5.0),
    "any": (None, None),
}
WORKLOADS: tuple[str, ...] = (
    "code", "reasoning", "tool_use", "structured_output", "translation", "summary", "general",
)


@immutable
class AutoConfig:
    """SPEC §16. `max_input` / `max_output` of 0 mean "the profile's cap"."""

    enabled: bool = False  # the loader sets it when the [auto] table is present
    objective: Objective = "balanced"
    spend_profile: SpendProfile = "any"  # caps are opt-in: no [auto] key, no cap
    max_input: float = 0.0
    max_output: float = 0.0
    models: tuple[str, ...] = ()
    fallbacks: bool = True
    classifier: str = "local"
    classifier_timeout_ms: int = 1500
    capability_margin: float = 0.1


class _Errors(Protocol):
    def error(self, key: str, why: str) -> None: ...


def price_caps(auto: AutoConfig) -> tuple[float | None, float | None]:
    """($/1M input cap, $/1M output cap): a custom cap wins over the profile's."""
    cap_in, cap_out = SPEND_PROFILES[auto.spend_profile]
    return (auto.max_input or cap_in, auto.max_output or cap_out)


def known_price(model: str, cfg: Config) -> bool:
    """A model's price is known when it has a `[models.X]` table."""
    return model in cfg.models


def matches_patterns(model: str, patterns: tuple[str, ...], cfg: Config) -> bool:
    """Whether `model` or `<channel>/<model>` (any enabled channel serving it) matches."""
    if not patterns:
        return True
    names = [model] + [f"{ch.name}/{model}" for ch in cfg.compiled.by_model.get(model, ())
                       if ch.enabled]
    return any(fnmatchcase(n, p) for p in patterns for n in names)


def channel_gate(model: str, channel: str, cfg: Config, auto: AutoConfig) -> str | None:
    """Why `channel` may not serve `model` under `[auto]` (SPEC §16, §20), or None: `pattern`
    when neither `model` nor `<channel>/<model>` matches `[auto] models`; `price_cap` when the
    channel's own price of the model (its `prices` entry, else the `[models]` table) is above
    a cap. The caps are hard: they bind the price the request is billed at."""
    patterns = auto.models
    if patterns and not any(fnmatchcase(model, p) or fnmatchcase(f"{channel}/{model}", p)
                            for p in patterns):
        return "pattern"
    price = price_on(cfg, channel, model)
    if price is None:
        return "no_price"
    cap_in, cap_out = price_caps(auto)
    if (cap_in is not None and price.input > cap_in) or (
            cap_out is not None and price.output > cap_out):
        return "price_cap"
    return None


def within_caps(model: str, cfg: Config, auto: AutoConfig) -> bool:
    """Some enabled channel serves `model` within the patterns and the caps."""
    return any(channel_gate(model, ch.name, cfg, auto) is None
               for ch in cfg.compiled.by_model.get(model, ()) if ch.enabled)


def auto_models(cfg: Config, auto: AutoConfig) -> tuple[str, ...]:
    """Served, priced models that some enabled channel serves within the patterns and the
    caps, in config order."""
    return tuple(m for m in cfg.model_ids()
                 if known_price(m, cfg) and matches_patterns(m, auto.models, cfg)
                 and within_caps(m, cfg, auto))


def strong_band(models: tuple[str, ...], cfg: Config, margin: float) -> tuple[str, ...]:
    """The highest quality band: quality within `margin` of the best; () when it would leave
    no model for the base tier."""
    if not models:
        return ()
    best = max(cfg.models[m].quality for m in models)
    band = tuple(m for m in models if cfg.models[m].quality >= best - margin - 1e-12)
    return band if len(band) < len(models) else ()


def post_auto(a: AutoConfig, raw: Mapping[str, Any], path: str, ctx: _Errors) -> AutoConfig:
    """The loader's hook for `[auto]`: presence enables it; ranges and patterns checked."""
    where = (lambda k: f"{path}.{k}") if path else (lambda k: k)
    for key in ("max_input", "max_output"):
        value = getattr(a, key)
        if not (math.isfinite(value) and value >= 0):
            ctx.error(where(key), f"must be >= 0 $ per 1M tokens (0 = the profile's cap), "
                      f"got {value:g}")
            # Reported once: the profile's cap stands in, so no follow-on error.
            a = dataclasses.replace(a, max_input=0.0) if key == "max_input" else \
                dataclasses.replace(a, max_output=0.0)
    if not 1 <= a.classifier_timeout_ms <= 60_000:
        ctx.error(where("classifier_timeout_ms"),
                  f"must be in [1, 60000], got {a.classifier_timeout_ms}")
    if not 0 <= a.capability_margin <= 1:
        ctx.error(where("capability_margin"), f"must be in [0, 1], got {a.capability_margin:g}")
    if not a.classifier.strip():
        ctx.error(where("classifier"), 'must be "local" or a model id, got ""')
    for i, p in enumerate(a.models):
        if not p.strip():
            ctx.error(f"{where('models')}[{i}]", "must be a model id or a glob pattern, got \"\"")
    return dataclasses.replace(a, enabled=bool(raw.get("enabled", True)))


def _check_quality_by_workload(cfg: Config, error: Callable[[str, str], None]) -> None:
    for name, m in cfg.models.items():
        for workload, q in m.quality_by_workload.items():
            key = f'models."{name}".quality_by_workload.{workload}'
            if workload not in WORKLOADS:
                error(key, f"unknown workload; valid: {', '.join(WORKLOADS)}")
            elif not 0 <= q <= 1:
                error(key, f"must be in [0, 1], got {q:g}")


def with_auto_router(cfg: Config, error: Callable[[str, str], None]) -> Config:
    """The config with the implicit `auto` router added (see the module docstring), after
    checking `quality_by_workload` and the `[auto]` references."""
    from orca_cli.config.schema import EscalationConfig, RouterConfig

    _check_quality_by_workload(cfg, error)
    auto = cfg.auto
    if not auto.enabled:
        return cfg
    if auto.classifier != "local" and auto.classifier not in cfg.model_ids():
        error("auto.classifier", f'"{auto.classifier}" is not "local" nor a model an enabled '
              "channel serves")
    if AUTO_ROUTER in cfg.routers:
        return cfg
    allowed = auto_models(cfg, auto)
    if not allowed:
        error("auto.models", "no model is eligible: every served model with a [models] table "
              "is outside the patterns or the spend profile's price caps")
        return cfg
    strong = strong_band(allowed, cfg, auto.capability_margin)
    esc = EscalationConfig(mode="auto" if strong else "off", pool=strong)
    router = RouterConfig(name=AUTO_ROUTER, strategy="auto", allowed_models=allowed,
                          strong_pool=strong, escalation=esc)
    return dataclasses.replace(cfg, routers={**cfg.routers, AUTO_ROUTER: router})
