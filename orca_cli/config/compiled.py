"""The indices the request path reads, built once per loaded config (`Config.compiled`).

A `Config` is frozen, so everything that depends on it alone is derived once and read in
O(1) per request instead of being rescanned: the channel by name, the channels listing a
model, the enabled channels serving a model in each wire format, the key slots of each
channel, each router's base and strong pools, the set of models counted strong, the cache
window of each channel and the glob aliases in match order. `load` builds it; a config made
in code (`Config(...)`, `dataclasses.replace`) builds its own on first use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from fnmatch import fnmatchcase
from types import MappingProxyType
from typing import TYPE_CHECKING

from orca_cli.types import APIS, Api

if TYPE_CHECKING:
    from orca_cli.config.schema import ChannelConfig, ChannelPrice, Config, ModelConfig

__all__ = ["GLOB_CHARS", "TARGET_MEMO_MAX", "CompiledConfig", "RouterPools", "price_on"]

GLOB_CHARS = frozenset("*?[")
TARGET_MEMO_MAX = 1024  # `CompiledConfig.target_memo`'s bound


class RouterPools:
    """A router's tiers as the request path reads them (SPEC §6.1)."""

    __slots__ = ("allowed", "base", "blind", "smallest_window", "strong", "strong_set")

    def __init__(self, allowed: tuple[str, ...], base: tuple[str, ...],
                 strong: tuple[str, ...], smallest_window: int, blind: bool = False) -> None:
        self.allowed = allowed
        self.base = base  # allowed models minus the strong tier
        self.strong = strong  # `escalation.pool`, default the router's strong_pool
        self.strong_set = frozenset(strong)
        # SPEC §14.3: the smallest context window among the models a request to this router
        # can be sent to (its candidates are drawn from `allowed` alone).
        self.smallest_window = smallest_window
        # Some allowed model reads no images (`vision = false`): only then is a request to
        # this router looked at for images.
        self.blind = blind

    def __repr__(self) -> str:
        return f"RouterPools(base={self.base!r}, strong={self.strong!r})"


def price_on(cfg: Config, channel: str, model: str) -> ModelConfig | None:
    """The model's price on `channel` (SPEC §20): the channel's `prices` entry, else the
    `[models]` table; None when neither prices it."""
    own = cfg.compiled.channel_prices.get((channel, model))
    return own if own is not None else cfg.models.get(model)


def _overridden(model: ModelConfig, price: ChannelPrice) -> ModelConfig:
    """The model's table with the channel's set figures in place of its own."""
    changes = {k: v for k in ("input", "output", "cache_read", "cache_write")
               if (v := getattr(price, k)) is not None}
    return dataclasses.replace(model, **changes)


class CompiledConfig:
    """Read-only indices of one `Config`; see the module docstring."""

    __slots__ = (
        "alias_globs",
        "blind_models",
        "by_model",
        "cache_ttl_s",
        "channel_index",
        "channel_prices",
        "enabled_channels",
        "housekeeping_no_tools",
        "key_fps",
        "key_slots",
        "left_out",
        "model_ids",
        "pool_memo",
        "pools",
        "serving",
        "serving_memo",
        "session_routers",
        "smallest_window",
        "strong_models",
        "target_memo",
    )

    def __init__(self, cfg: Config) -> None:
        index: dict[str, ChannelConfig] = {}
        by_model: dict[str, list[ChannelConfig]] = {}
        for ch in cfg.channels:
            index.setdefault(ch.name, ch)  # the first of a duplicated name, as a scan finds
            for m in ch.models:
                by_model.setdefault(m, []).append(ch)
        enabled = tuple(ch for ch in cfg.channels if ch.enabled)
        self.channel_index: Mapping[str, ChannelConfig] = MappingProxyType(index)
        self.enabled_channels: tuple[ChannelConfig, ...] = enabled
        # Every channel listing the model (enabled or not), in config order.
        self.by_model: Mapping[str, tuple[ChannelConfig, ...]] = MappingProxyType(
            {m: tuple(chs) for m, chs in by_model.items()})
        # Enabled channels that list the model and accept the format, in config order.
        self.serving: Mapping[tuple[str, Api], tuple[ChannelConfig, ...]] = MappingProxyType({
            (m, api): tuple(c for c in chs if c.enabled and c.accepts(api))
            for m, chs in by_model.items() for api in APIS
        })
        # Channels listing the model that cannot take a request of the format, with why: the
        # disabled ones ("channel_disabled"), then enabled ones of another format
        # ("format_mismatch"), each in config order.
        self.left_out: Mapping[tuple[str, Api], tuple[tuple[str, str], ...]] = MappingProxyType({
            (m, api): tuple((c.name, "channel_disabled") for c in chs if not c.enabled)
            + tuple((c.name, "format_mismatch") for c in chs if c.enabled and not c.accepts(api))
            for m, chs in by_model.items() for api in APIS
        })
        self.model_ids: tuple[str, ...] = tuple(
            dict.fromkeys(m for ch in enabled for m in ch.models))
        slots = {ch.name: ((0, ""),) if not ch.keys else tuple(
            (i, k.fp) for i, k in enumerate(ch.keys)) for ch in reversed(cfg.channels)}
        self.key_slots: Mapping[str, tuple[tuple[int, str], ...]] = MappingProxyType(slots)
        self.key_fps: Mapping[str, Mapping[int, str]] = MappingProxyType(
            {name: MappingProxyType(dict(s)) for name, s in slots.items()})
        self.cache_ttl_s: Mapping[str, int] = MappingProxyType(
            {name: ch.cache_ttl_s for name, ch in index.items()})
        from orca_cli.config.schema import ModelConfig as _Model  # schema imports this module

        default_model = _Model()  # a model without a `[models]` table
        default_window = default_model.context_window
        self.pools: Mapping[str, RouterPools] = MappingProxyType({
            name: RouterPools(r.allowed_models, r.base_pool, r.escalation_pool, min(
                (cfg.models.get(m, default_model).context_window for m in r.allowed_models),
                default=default_window), any(
                not cfg.models.get(m, default_model).vision for m in r.allowed_models))
            for name, r in cfg.routers.items()
        })
        self.strong_models: frozenset[str] = frozenset(
            m for p in self.pools.values() for m in p.strong)
        # The models that read no images (`vision = false`).
        self.blind_models: frozenset[str] = frozenset(
            m for m, mc in cfg.models.items() if not mc.vision)

        # SPEC §20: (channel, model) -> the model's price on that channel, only where the
        # channel overrides it (`prices`); everywhere else the `[models]` table's.
        self.channel_prices: Mapping[tuple[str, str], ModelConfig] = MappingProxyType({
            (ch.name, m): _overridden(cfg.models.get(m, default_model), p)
            for ch in reversed(cfg.channels) for m, p in ch.prices.items()})
        # SPEC §14.3: the smallest context window any candidate can have (a model without a
        # `[models]` table has the default one): an estimate at or under it fits every window
        # (`routing.route._fitting_estimate`). Whether a body is scanned for inline media is
        # decided by its target's own models (`RouterPools.smallest_window`).
        self.smallest_window: int = min(
            [default_window, *(m.context_window for m in cfg.models.values())])
        # SPEC §14.1: the session-aware routers, in config order (an aliased side request
        # counts in its session's figures when there is exactly one).
        self.session_routers: tuple[str, ...] = tuple(
            name for name, r in cfg.routers.items() if r.session_aware)
        # SPEC §14.1: every `[[housekeeping]]` rule wants a request without tools, so a request
        # declaring tools is no side request (`turn.prepare._side`, every session's request).
        self.housekeeping_no_tools: bool = all(rule.no_tools for rule in cfg.housekeeping)
        globs = [k for k in cfg.aliases if GLOB_CHARS & set(k)]
        # Longest pattern first; ties by the pattern text, so the first match is the winner.
        self.alias_globs: tuple[str, ...] = tuple(sorted(globs, key=lambda k: (-len(k), k)))
        # What the config alone says about serving a configured model in a format, filled by
        # `routing.candidates` on first use: a function of this config only, so it lives and
        # dies with it (a reload builds a new CompiledConfig); at most models x formats.
        self.serving_memo: dict[tuple[str, Api], object] = {}
        # The same per pool of models the config holds (a router's tier, its fallbacks).
        self.pool_memo: dict[tuple[tuple[str, ...], Api], object] = {}
        # `routing.target.resolve_target`'s answer per `model` field that resolved: a function
        # of this config and the name alone (no request's data: the name is the key, and the
        # answer names it). Filled on first use, up to TARGET_MEMO_MAX names (a glob alias
        # matches without end), then names past those are resolved each time.
        self.target_memo: dict[str, object] = {}

    def alias_key(self, name: str, aliases: Mapping[str, str], *, globs: bool) -> str | None:
        """The exact alias key for `name`, else (with `globs`) the longest matching pattern."""
        if name in aliases:
            return name
        if not globs:
            return None
        return next((k for k in self.alias_globs if fnmatchcase(name, k)), None)

    def serving_channels(self, model: str, api: Api) -> tuple[ChannelConfig, ...]:
        """Enabled channels listing `model` that accept `api`, in config order."""
        return self.serving.get((model, api), ())
