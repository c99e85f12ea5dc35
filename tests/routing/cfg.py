"""Config builders for routing tests: plain schema dataclasses, no TOML."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from orca_cli.config.schema import ChannelConfig, Config, ModelConfig, RouterConfig, Secret


def channel(
    name: str, models: Iterable[str], *, keys: Iterable[str] = ("k-1",), **kw: Any
) -> ChannelConfig:
    """A channel with real `Secret` keys (default one key `k-1`, api openai)."""
    return ChannelConfig(name=name, models=tuple(models), keys=tuple(Secret(k) for k in keys), **kw)


def config(
    channels: Iterable[ChannelConfig] = (),
    *,
    models: Mapping[str, ModelConfig] | None = None,
    routers: Iterable[RouterConfig] = (),
    aliases: Mapping[str, str] | None = None,
) -> Config:
    return Config(
        channels=tuple(channels),
        models=dict(models or {}),
        routers={r.name: r for r in routers},
        aliases=dict(aliases or {}),
    )


def price(
    inp: float, out: float, *, quality: float = 0.5, context_window: int = 128000
) -> ModelConfig:
    return ModelConfig(input=inp, output=out, quality=quality, context_window=context_window)
