"""Candidate sets, exclusions with reasons, channel and key ordering, soft pins (SPEC §1.3, §5).

`build_candidates` turns a list of model ids (a tier's pool, a router's allowed set, or one
concrete model) into `Candidate`s. A candidate is excluded, with a reason code, when

* `no_channel`      — no enabled channel serves it (or the qualified channel is disabled);
* `format_mismatch` — no enabled channel serving it speaks the inbound api;
* `context_window`  — its `context_window` is smaller than the request's estimated tokens;
* `vision`          — the request carries an image or a PDF and the model reads none
  (`vision = false`);
* `unhealthy`       — every channel that could serve it has no healthy key;
* `provider`        — the router's `providers_allow` / `providers_ignore` or the request's
  `provider.only` / `provider.ignore` leave no channel serving it (SPEC §20).

Channels filtered out of a kept candidate are listed in `Candidate.filtered` with their
reasons (`channel_disabled`, `format_mismatch`, `unhealthy`, `drained`, `provider_policy`,
`provider_request`). Drained channels with a healthy key are kept apart in
`Candidate.drained`: the last failover of a request (SPEC §20).

Channel order within a model follows the mode (SPEC §1.3): `balanced` is a weighted random
order over healthy channels by `weight` (drawn without replacement from the injected rng, so
the first pick is weight-proportional and the rest is the fallback order); `price`, `latency`
and `throughput` are ordered. In every mode weight-0 channels are drained — excluded unless
nothing else serves, and an all-zero pool is treated as equal weights.

Health is an injected predicate `healthy(channel_name, key_index)`; the proxy's breaker plugs
in there. A channel without keys (`sim`, pass-through auth) has one implicit key slot, index 0,
with an empty fingerprint. Pure and I/O-free.

What depends on the config alone (which channels serve a model and speak a format, the key
slots of a channel) is read from the config's compiled indices (`Config.compiled`, built once
at load); what a request brings (its size, the health view, the rng) is applied on every call.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from orca_cli.config.schema import ChannelConfig, Config, ModelConfig
from orca_cli.immutable import immutable
from orca_cli.routing.modes import NO_MEASURES, ChannelPolicy, Measured, sort_by_mode
from orca_cli.routing.target import Mode
from orca_cli.types import Api

__all__ = [
    "PLAIN",
    "Api",
    "Candidate",
    "ChannelChoice",
    "Healthy",
    "Mode",
    "Sourcing",
    "all_healthy",
    "build_candidates",
    "check_channel_pin",
    "check_model_pin",
    "key_fp",
    "key_slots",
    "model_config",
    "order_channels",
    "order_keys",
    "speaks",
]

Healthy = Callable[[str, int], bool]

_DEFAULT_MODEL = ModelConfig()


def all_healthy(channel: str, key_index: int) -> bool:
    """The default health predicate: everything is healthy."""
    return True


@immutable
class ChannelChoice:
    """One channel able to serve a candidate, with its healthy key indices in try order."""

    channel: str
    weight: float
    keys: tuple[int, ...]


@immutable
class Candidate:
    """A model considered for a request. `excluded` is a reason code or None."""

    model: str
    channels: tuple[ChannelChoice, ...]
    excluded: str | None
    reason: str
    filtered: tuple[tuple[str, str], ...] = ()  # (channel, reason) left out of `channels`
    # Drained (weight-0) healthy channels: left out of `channels`, tried only as the last
    # failover of a request whose other attempts failed (SPEC §20).
    drained: tuple[ChannelChoice, ...] = ()

    @property
    def usable(self) -> bool:
        return self.excluded is None


def model_config(model: str, cfg: Config) -> ModelConfig:
    """The model's `[models."<id>"]` table, or the ModelConfig defaults."""
    return cfg.models.get(model, _DEFAULT_MODEL)


def speaks(ch: ChannelConfig, api: str) -> bool:
    """Whether the channel speaks the inbound wire format natively (its `api` list, SPEC §13.2)."""
    return ch.accepts(api)


def key_slots(ch: ChannelConfig) -> tuple[tuple[int, str], ...]:
    """(index, fingerprint) of every key; one implicit slot `(0, "")` for a keyless channel."""
    if not ch.keys:
        return ((0, ""),)
    return tuple((i, k.fp) for i, k in enumerate(ch.keys))


def key_fp(ch: ChannelConfig | None, key_index: int) -> str:
    """The fingerprint of the key at `key_index` ("" for a keyless channel or no such key)."""
    if ch is None or not 0 <= key_index < max(1, len(ch.keys)):
        return ""
    return ch.keys[key_index].fp if ch.keys else ""


def order_keys(
    ch: ChannelConfig, healthy: Healthy = all_healthy, rng: random.Random | None = None
) -> tuple[int, ...]:
    """Healthy key indices in try order: round-robin from a random start (rng), else in order.

    Rotating from a random start spreads first attempts evenly over the healthy keys while
    the remaining keys stay in config order as the fallback sequence.
    """
    return _rotate(tuple(i for i, _ in key_slots(ch) if healthy(ch.name, i)), rng)


def _rotate(good: tuple[int, ...], rng: random.Random | None) -> tuple[int, ...]:
    if rng is None or len(good) < 2:
        return good
    start = rng.randrange(len(good))
    return good[start:] + good[:start]


def order_channels(
    channels: Sequence[ChannelConfig], mode: Mode, rng: random.Random | None = None, *,
    model: str = "", cfg: Config | None = None, measured: Measured = NO_MEASURES,
) -> tuple[list[ChannelConfig], list[ChannelConfig]]:
    """Order channels of one model by mode; returns (ordered, drained).

    Weight-0 channels are drained unless every channel has weight 0 (then all count equal).
    `balanced` without an rng (explain, config check) orders by weight desc, then name;
    `price`, `latency` and `throughput` by `modes.mode_key` (the channel's effective price of
    `model`, the measured figures with the configured ones as priors), then weight.
    """
    live = [c for c in channels if c.weight > 0]
    drained = [c for c in channels if c.weight <= 0] if live else []
    pool = live or list(channels)
    all_zero = not live

    def weight(c: ChannelConfig) -> float:
        return 1.0 if all_zero else float(c.weight)

    by_weight = sorted(pool, key=lambda c: (-weight(c), c.name))
    if mode == "balanced":
        if rng is None:
            return by_weight, drained
        return _weighted_order(pool, weight, rng), drained
    return sort_by_mode(by_weight, mode, model, cfg, measured), drained


def _weighted_order(
    pool: Sequence[ChannelConfig], weight: Callable[[ChannelConfig], float], rng: random.Random
) -> list[ChannelConfig]:
    """Weighted sampling without replacement, one `rng.random()` per position."""
    rest = list(pool)
    out: list[ChannelConfig] = []
    while rest:
        total = sum(weight(c) for c in rest)
        point = rng.random() * total
        pick = len(rest) - 1
        for i, c in enumerate(rest):
            point -= weight(c)
            if point < 0:
                pick = i
                break
        out.append(rest.pop(pick))
    return out


@immutable
class Sourcing:
    """How one request's candidates are sourced, beyond the models and the config: the
    channel-ordering mode, the health view, the request's generator (None: the configured
    weight order, no draw), a provider-qualified request's one channel, and the provider
    lists with the measured figures (SPEC §20)."""

    mode: Mode = "balanced"
    healthy: Healthy = all_healthy
    rng: random.Random | None = None
    channel: str | None = None
    policy: ChannelPolicy | None = None


PLAIN = Sourcing()


def build_candidates(models: Sequence[str], api: Api, est_tokens: int, cfg: Config,
                     how: Sourcing = PLAIN, images: bool = False) -> tuple[Candidate, ...]:
    """One Candidate per distinct model id, in the given order (SPEC §1.3), its channels and
    keys sourced as `how` says. `images`: the request carries an image or a PDF
    (`wire.estimate.needs_vision`)."""
    out: list[Candidate] = []
    plain = how.policy is None or not how.policy.narrows
    for m, sv in _pool(models, api, cfg, how.channel):
        if sv.solo is not None and plain and sv.window >= est_tokens and (
                sv.vision or not images):
            # The common case (one channel, at most one key slot, nothing to narrow, the
            # request fits) without `_candidate`'s call and checks.
            out.append(_served_by(m, sv, api, cfg, how))
        else:
            out.append(_candidate(m, sv, api, est_tokens, cfg, how, images))
    return tuple(out)


@immutable
class _Serving:
    """What the config alone says about serving `model` in one wire format."""

    fitting: tuple[ChannelConfig, ...]  # enabled channels that serve it and speak the format
    filtered: tuple[tuple[str, str], ...]  # (channel, channel_disabled | format_mismatch)
    excluded: str | None  # no_channel | format_mismatch, or None
    reason: str
    window: int
    vision: bool  # the model reads images
    # The candidate of the common case, one channel with at most one key slot, built once
    # here: a request whose slot is healthy gets it as it is (candidates are values).
    solo: Candidate | None = None


def _usable(model: str, fitting: tuple[ChannelConfig, ...],
            filtered: tuple[tuple[str, str], ...], window: int, vision: bool) -> _Serving:
    solo = None
    if len(fitting) == 1 and len(fitting[0].keys) <= 1:
        c = fitting[0]
        solo = Candidate(model, (ChannelChoice(c.name, c.weight, (0,)),), None, "ok", filtered)
    return _Serving(fitting, filtered, None, "ok", window, vision, solo)


def _pool(models: Sequence[str], api: Api, cfg: Config,
          only: str | None) -> tuple[tuple[str, _Serving], ...]:
    """(model, what the config says about serving it) per distinct model, in order. A pool
    the config holds (a tuple of configured models: a router's tier, its fallbacks) is
    looked up once per config and format, since every request re-sources its tiers."""
    if only is not None or not isinstance(models, tuple):
        return tuple((m, _serving(m, api, cfg, only)) for m in dict.fromkeys(models))
    memo = cfg.compiled.pool_memo
    got = memo.get((models, api))
    if not isinstance(got, tuple):
        got = tuple((m, _serving(m, api, cfg, None)) for m in dict.fromkeys(models))
        if all(m in cfg.compiled.by_model for m in models):  # the memo stays bounded
            memo[(models, api)] = got
    return got


def _serving(model: str, api: Api, cfg: Config, only: str | None) -> _Serving:
    if only is not None:  # a provider-qualified request: its one channel, not memoised
        return _serving_uncached(model, api, cfg, only)
    memo = cfg.compiled.serving_memo
    sv = memo.get((model, api))
    if not isinstance(sv, _Serving):
        sv = _serving_uncached(model, api, cfg, None)
        if model in cfg.compiled.by_model:  # configured models only: the memo stays bounded
            memo[(model, api)] = sv
    return sv


def _serving_uncached(model: str, api: Api, cfg: Config, only: str | None) -> _Serving:
    mc = model_config(model, cfg)
    window, vision = mc.context_window, mc.vision
    if only is None:  # the common case: read from the compiled indices
        c = cfg.compiled
        fitting, filtered = c.serving_channels(model, api), c.left_out.get((model, api), ())
    else:
        listing = [ch for ch in cfg.compiled.by_model.get(model, ()) if ch.name == only]
        fitting = tuple(ch for ch in listing if ch.enabled and ch.accepts(api))
        filtered = tuple((ch.name, "channel_disabled") for ch in listing if not ch.enabled) + tuple(
            (ch.name, "format_mismatch") for ch in listing if ch.enabled and not ch.accepts(api))
    if filtered and cfg.translation.enabled:
        fitting, filtered = _with_translation(model, api, cfg, fitting, filtered)
    if fitting:
        return _usable(model, fitting, filtered, window, vision)
    if any(why == "format_mismatch" for _, why in filtered):
        why = f"no enabled channel serving {model!r} speaks the {api} format"
        return _Serving((), filtered, "format_mismatch", why, window, vision)
    why = f"no enabled channel serves {model!r}" + (f" via {only!r}" if only else "")
    return _Serving((), filtered, "no_channel", why, window, vision)


def _with_translation(
    model: str, api: Api, cfg: Config, fitting: tuple[ChannelConfig, ...],
    filtered: tuple[tuple[str, str], ...],
) -> tuple[tuple[ChannelConfig, ...], tuple[tuple[str, str], ...]]:
    """With `[translation] enabled`, an enabled channel of another format serves too (SPEC
    §13.2), after the native ones: a native channel costs no translation."""
    foreign = {name for name, why in filtered if why == "format_mismatch"}
    if not foreign:
        return fitting, filtered
    extra = tuple(ch for ch in cfg.compiled.by_model.get(model, ()) if ch.name in foreign)
    return fitting + extra, tuple(f for f in filtered if f[1] != "format_mismatch")


def native_first(chs: Sequence[ChannelConfig], api: Api) -> bool:
    """Whether `chs` mixes formats (the native ones must then be ordered first)."""
    return any(c.accepts(api) for c in chs) and not all(c.accepts(api) for c in chs)


def _candidate(model: str, sv: _Serving, api: Api, est_tokens: int, cfg: Config,
               o: Sourcing, images: bool = False) -> Candidate:
    policy = o.policy
    if sv.excluded is None and policy is not None and policy.narrows:
        sv = _narrowed(sv, model, policy)
    if sv.excluded is not None:
        return Candidate(model, (), sv.excluded, sv.reason, sv.filtered)
    if sv.window < est_tokens:
        why = f"context_window {sv.window} < estimated {est_tokens} tokens"
        return Candidate(model, (), "context_window", why, sv.filtered)
    if images and not sv.vision:
        return Candidate(model, (), "vision", "the request carries an image or a PDF; the model "
                         "reads neither (vision = false)", sv.filtered)
    return _served_by(model, sv, api, cfg, o)


def _served_by(model: str, sv: _Serving, api: Api, cfg: Config, o: Sourcing) -> Candidate:
    """A model that can serve the request: its one healthy channel and key as the config
    built it (the common case), else its channels and keys sourced (`_sourced`)."""
    rng = o.rng
    if sv.solo is not None and o.healthy(sv.fitting[0].name, 0):
        if rng is not None and o.mode == "balanced":
            rng.random()  # the draw `order_channels` makes for one channel: same stream
        return sv.solo
    return _sourced(model, sv, api, cfg, o)


def _sourced(model: str, sv: _Serving, api: Api, cfg: Config, o: Sourcing) -> Candidate:
    """A usable model's channels and keys, past the common case (`_served_by`): the healthy
    ones, in the mode's order; the drained apart."""
    healthy, rng = o.healthy, o.rng
    filtered = list(sv.filtered)
    slots = cfg.compiled.key_slots
    alive = []
    for c in sv.fitting:
        if any(healthy(c.name, i) for i, _ in slots[c.name]):
            alive.append(c)
        else:
            filtered.append((c.name, "unhealthy"))
    if not alive:
        why = f"every channel serving {model!r} is unhealthy"
        return Candidate(model, (), "unhealthy", why, tuple(filtered))
    ordered, drained = _ordered(alive, api, model, cfg, o)
    filtered.extend((c.name, "drained") for c in drained)

    def choice(c: ChannelConfig) -> ChannelChoice:
        keys = _rotate(tuple(i for i, _ in slots[c.name] if healthy(c.name, i)), rng)
        return ChannelChoice(c.name, c.weight, keys)
    return Candidate(model, tuple(choice(c) for c in ordered), None, "ok", tuple(filtered),
                     tuple(choice(c) for c in drained))


def _ordered(alive: list[ChannelConfig], api: Api, model: str, cfg: Config,
             o: Sourcing) -> tuple[list[ChannelConfig], list[ChannelConfig]]:
    """(ordered, drained) by the mode, then the request's `provider.order`; with translation,
    the native channels first, each group in that order."""
    measured = o.policy.measured if o.policy is not None else NO_MEASURES
    if native_first(alive, api):
        native, drained = order_channels([c for c in alive if c.accepts(api)], o.mode, o.rng,
                                         model=model, cfg=cfg, measured=measured)
        other, drained2 = order_channels([c for c in alive if not c.accepts(api)], o.mode,
                                         o.rng, model=model, cfg=cfg, measured=measured)
        ordered, drained = native + other, drained + drained2
    else:
        ordered, drained = order_channels(alive, o.mode, o.rng, model=model, cfg=cfg,
                                          measured=measured)
    if o.policy is not None:
        ordered = o.policy.reorder(ordered)
    return ordered, drained


def _narrowed(sv: _Serving, model: str, policy: ChannelPolicy) -> _Serving:
    """The serving channels the router's and the request's provider lists, and an auto
    router's patterns and price caps, allow (SPEC §16, §20); excluded when they leave none:
    `provider` for the lists, else the auto router's reason (`price_cap`, `pattern`,
    `no_price`)."""
    kept, out = policy.narrow(sv.fitting, model)
    if not out:
        return sv
    filtered = sv.filtered + out
    if kept:
        return _usable(model, kept, filtered, sv.window, sv.vision)
    left = ", ".join(n for n, _ in out)
    whys = {w for _, w in out}
    if whys <= _AUTO_GATES.keys():
        code = next(w for w in ("price_cap", "pattern", "no_price") if w in whys)
        why = (f"the auto router's {_AUTO_GATES[code]} leave no channel serving {model!r} "
               f"(left out: {left})")
        return _Serving((), filtered, code, why, sv.window, sv.vision)
    by = ("the request's provider preferences" if any(w == "provider_request" for _, w in out)
          else "the router's providers_allow / providers_ignore")
    why = f"{by} leave no channel serving {model!r} (left out: {left})"
    return _Serving((), filtered, "provider", why, sv.window, sv.vision)


_AUTO_GATES = {"price_cap": "price caps", "pattern": "[auto] models patterns",
               "no_price": "price tables"}


def check_channel_pin(
    pin: Mapping[str, Any] | None,
    model: str,
    cfg: Config,
    healthy: Healthy = all_healthy,
    api: Api = "openai",
) -> tuple[bool, bool, str]:
    """Consult a soft channel pin `{channel, key_index, key_fp}` (SPEC §5).

    Returns (usable, keep, reason). `keep=False` means the pin should be deleted:
    `channel_missing`, `channel_disabled`, `not_served` (the channel no longer lists the
    model), `format_mismatch`, `key_missing`, `key_rotated` (the key at `key_index` has
    another fingerprint — a reordered or rotated `keys` list), `channel_drained` (weight 0
    while the model has another live channel of weight > 0; kept in an all-zero pool).
    `unhealthy` (cool-down, open breaker) is not usable but kept. A pin never fails a request.
    """
    if pin is None:
        return False, True, "no_pin"
    ch = cfg.channel(str(pin.get("channel", "")))
    if ch is None:
        return False, False, "channel_missing"
    if not ch.enabled:
        return False, False, "channel_disabled"
    if model not in ch.models:
        return False, False, "not_served"
    if not speaks(ch, api) and not cfg.translation.enabled:
        return False, False, "format_mismatch"
    index = pin.get("key_index")
    slots = cfg.compiled.key_fps.get(ch.name, {})
    if not isinstance(index, int) or isinstance(index, bool) or index not in slots:
        return False, False, "key_missing"
    if slots[index] != str(pin.get("key_fp", "")):
        return False, False, "key_rotated"
    if ch.weight <= 0 and any(
        c.weight > 0 and c.name != ch.name for c in cfg.compiled.serving_channels(model, api)
    ):
        return False, False, "channel_drained"
    if not healthy(ch.name, index):
        return False, True, "unhealthy"
    return True, True, "ok"


def check_model_pin(pinned_model: str | None, candidates: Sequence[Candidate]) -> tuple[bool, str]:
    """Is the pinned model a usable candidate of the current tier's pool? (SPEC §5, §6.1)."""
    if pinned_model is None:
        return False, "no_pin"
    for c in candidates:
        if c.model == pinned_model:
            return (True, "ok") if c.excluded is None else (False, c.excluded)
    return False, "not_in_tier"
