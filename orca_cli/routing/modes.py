"""Gateway modes that mean what they say (SPEC §20): prices per channel, measured latency and
throughput, and the provider preferences a request may bring. Pure and I/O-free.

* A channel's price of a model is its `prices` entry over the model's `[models]` table
  (`channel_price`); `price` mode orders channels (and, for a request's `:cheap`, the models
  of a router's tier) by input + output price there.
* `latency` orders by first-byte latency and `throughput` by output tokens per second as
  orca measured them on live traffic (`Measure`, an EWMA per (channel, model) kept by the
  sidecar process), the configured `expected_latency_ms` / `expected_tps` standing in until a
  figure is measured. A channel with neither comes after the ones with a figure, by weight.
* The request's `provider` object (OpenRouter's: `order`, `only`, `ignore`,
  `allow_fallbacks`, `sort`) and `routing.mode` narrow and reorder within the router's own
  `providers_allow` / `providers_ignore`, never widen them. A provider name matches a
  channel's `name` or its `type` (`"anthropic"` names every channel of that type), ignoring
  case, as OpenRouter clients write `"Anthropic"`.

Precedence of the ordering mode: a model suffix (`:cheap`, `:fast`, `:nitro`), then
`provider.sort`, then `routing.mode`, then the router's `mode`. Only a suffix or
`routing.mode` picks the model of a router's tier (`rank_by_mode`); `provider.sort` orders
the providers (channels) of the chosen model, as on OpenRouter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from types import MappingProxyType
from typing import Any, NamedTuple

from orca_cli.config.auto import AutoConfig, channel_gate
from orca_cli.config.compiled import price_on
from orca_cli.config.schema import ChannelConfig, Config, ModelConfig, RouterConfig
from orca_cli.immutable import immutable
from orca_cli.routing.target import Mode, Target
from orca_cli.types import MAPPING

__all__ = [
    "NO_MEASURES", "ChannelPolicy", "Measure", "Measured", "ProviderPrefs", "channel_price",
    "mode_key", "model_pick_mode", "ordering_mode", "policy_for", "read_prefs",
    "sort_by_mode",
]

_MODES: tuple[Mode, ...] = ("balanced", "price", "latency", "throughput")
_SORTS: tuple[Mode, ...] = ("price", "latency", "throughput")
_DEFAULT_MODEL = ModelConfig()


class Measure(NamedTuple):
    """What orca measured of one (channel, model): EWMAs, 0 while not measured."""

    latency_ms: float = 0.0  # first-byte latency
    tps: float = 0.0  # output tokens per second


Measured = Mapping[tuple[str, str], Measure]
NO_MEASURES: Measured = MappingProxyType({})


def channel_price(model: str, channel: str, cfg: Config) -> ModelConfig:
    """The model's price on `channel`: its `prices` override, else the `[models]` table."""
    price = price_on(cfg, channel, model)
    return price if price is not None else _DEFAULT_MODEL


def mode_key(mode: Mode, ch: ChannelConfig, model: str, cfg: Config | None,
             measured: Measured) -> float | None:
    """Lower is better; None: nothing known (no price table, no measure, no prior)."""
    if mode == "price":
        if cfg is None:
            return None
        p = channel_price(model, ch.name, cfg)
        return p.input + p.output
    m = measured.get((ch.name, model))
    if mode == "latency":
        value = m.latency_ms if m is not None and m.latency_ms > 0 else ch.expected_latency_ms
        return value if value > 0 else None
    if mode == "throughput":
        value = m.tps if m is not None and m.tps > 0 else ch.expected_tps
        return -value if value > 0 else None
    return None


def sort_by_mode(by_weight: Sequence[ChannelConfig], mode: Mode, model: str,
                 cfg: Config | None, measured: Measured) -> list[ChannelConfig]:
    """`by_weight` (weight desc, then name) reordered by `mode_key`; ties and channels with
    no figure keep their weight order, the latter after every channel with one."""
    keyed = [(mode_key(mode, c, model, cfg, measured), c) for c in by_weight]
    known = sorted(((k, i, c) for i, (k, c) in enumerate(keyed) if k is not None),
                   key=lambda t: (t[0], t[1]))
    return [c for _, _, c in known] + [c for k, c in keyed if k is None]


@immutable
class ProviderPrefs:
    """A request's `provider` object and `routing.mode` (None / empty where not sent)."""

    order: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    allow_fallbacks: bool = True
    sort: Mode | None = None
    mode: Mode | None = None  # `routing.mode`


def _names(value: Any, key: str) -> tuple[str, ...] | str:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return f"provider.{key} must be an array of provider names (strings)"
    return tuple(value)


def read_prefs(body: Mapping[str, Any]) -> ProviderPrefs | None | str:
    """The body's preferences; None when it sends none; a message when they are malformed.
    Keys orca does not act on (`cache_aware_routing`, `data_collection`, ...) are ignored."""
    provider, routing = body.get("provider"), body.get("routing")
    if provider is None and routing is None:  # the common case, settled without a type check
        return None
    if provider is None and not (isinstance(routing, MAPPING) and "mode" in routing):
        return None
    fields: dict[str, Any] = {}
    if isinstance(routing, MAPPING) and "mode" in routing:
        if routing["mode"] not in _MODES:
            return f"routing.mode must be one of {', '.join(_MODES)}"
        fields["mode"] = routing["mode"]
    if provider is not None and not isinstance(provider, MAPPING):
        return "provider must be an object"
    for key in ("order", "only", "ignore"):
        if provider is not None and provider.get(key) is not None:
            names = _names(provider[key], key)
            if isinstance(names, str):
                return names
            fields[key] = names
    allow = provider.get("allow_fallbacks") if provider is not None else None
    if allow is not None and not isinstance(allow, bool):
        return "provider.allow_fallbacks must be true or false"
    sort = provider.get("sort") if provider is not None else None
    if isinstance(sort, MAPPING):  # OpenRouter's newer form: {"by": "price", ...}
        sort = sort.get("by")
    if sort is not None and sort not in _SORTS:
        return f"provider.sort must be one of {', '.join(_SORTS)}"
    return ProviderPrefs(allow_fallbacks=allow is not False, sort=sort, **fields)


def ordering_mode(target: Target, prefs: ProviderPrefs | None, configured: Mode) -> Mode:
    """Channel order: suffix, then `provider.sort`, then `routing.mode`, then the config's."""
    if target.mode_override is not None:
        return target.mode_override
    if prefs is not None:
        return prefs.sort or prefs.mode or configured
    return configured


def model_pick_mode(target: Target, prefs: ProviderPrefs | None) -> Mode | None:
    """The mode that picks a router's model (suffix, else `routing.mode`), or None (the
    strategy picks). `balanced` leaves the pick to the strategy."""
    mode = target.mode_override or (prefs.mode if prefs is not None else None)
    return None if mode in (None, "balanced") else mode


def _lower(names: Sequence[str]) -> frozenset[str]:
    return frozenset(n.lower() for n in names)


@immutable
class ChannelPolicy:
    """What narrows and reorders one request's channels beyond health and format."""

    measured: Measured = field(default_factory=lambda: NO_MEASURES)
    allow: frozenset[str] | None = None  # the router's `providers_allow`; None: all
    deny: frozenset[str] = frozenset()  # the router's `providers_ignore`
    only: frozenset[str] | None = None  # the request's `provider.only`
    ignore: frozenset[str] = frozenset()  # the request's `provider.ignore`
    order: tuple[str, ...] = ()  # the request's `provider.order`, lower-cased
    # An auto router's `[auto]` (SPEC §16), with its config: a channel serves a model only
    # within the patterns and at a price within the caps (`config.auto.channel_gate`).
    auto: tuple[AutoConfig, Config] | None = None

    @property
    def narrows(self) -> bool:
        return bool(self.allow is not None or self.deny or self.only is not None or self.ignore
                    or self.auto is not None)

    def why_not(self, ch: ChannelConfig, model: str = "") -> str | None:
        """`provider_policy` (the router's lists), `provider_request` (the request's), the
        auto router's `pattern`, `no_price` or `price_cap` for `model`, or None when the
        channel may serve."""
        if (self.allow is not None and not _matches(ch, self.allow)) or _matches(ch, self.deny):
            return "provider_policy"
        if (self.only is not None and not _matches(ch, self.only)) or _matches(ch, self.ignore):
            return "provider_request"
        if self.auto is not None:
            return channel_gate(model, ch.name, self.auto[1], self.auto[0])
        return None

    def narrow(self, chs: Sequence[ChannelConfig], model: str = ""
               ) -> tuple[tuple[ChannelConfig, ...], tuple[tuple[str, str], ...]]:
        kept, out = [], []
        for ch in chs:
            why = self.why_not(ch, model)
            if why is None:
                kept.append(ch)
            else:
                out.append((ch.name, why))
        return tuple(kept), tuple(out)

    def reorder(self, ordered: list[ChannelConfig]) -> list[ChannelConfig]:
        """`provider.order`'s channels first, in its order; the others after, as they were."""
        if not self.order:
            return ordered
        rank = {n: i for i, n in enumerate(self.order)}

        def place(c: ChannelConfig) -> int:
            return min(rank.get(c.name.lower(), len(rank)), rank.get(c.type, len(rank)))
        return sorted(ordered, key=place)


def _matches(ch: ChannelConfig, names: frozenset[str]) -> bool:
    return bool(names) and (ch.name.lower() in names or ch.type in names)


def policy_for(router: RouterConfig | None, prefs: ProviderPrefs | None,
               measured: Measured, mode: Mode = "latency",
               cfg: Config | None = None) -> ChannelPolicy | None:
    """The request's channel policy; None when nothing narrows or reorders and `mode` reads
    no measured figure (the common case: nothing built per request). With `cfg`, an auto
    router's policy also holds `[auto]`'s channel gate."""
    allow = _lower(router.providers_allow) if router and router.providers_allow else None
    deny = _lower(router.providers_ignore) if router and router.providers_ignore else frozenset()
    auto = (cfg.auto, cfg) if cfg is not None and router and router.strategy == "auto" else None
    if mode not in ("latency", "throughput"):
        measured = NO_MEASURES
    if prefs is None and allow is None and not deny and not measured and auto is None:
        return None
    p = prefs or ProviderPrefs()
    return ChannelPolicy(measured, allow, deny, None if p.only is None else _lower(p.only),
                         _lower(p.ignore), tuple(n.lower() for n in p.order), auto)
