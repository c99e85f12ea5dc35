"""Resolve a request's `model` field into what serves it (SPEC §1.3).

The field names one of:

* a router: `orca/<router>` or a bare configured router name;
* an alias from `[aliases]` (exact keys win over glob patterns; among patterns the longest
  wins); the alias target is itself resolved once, as a router or a model — never as another
  alias, so alias loops cannot happen;
* a concrete model served by an enabled channel;
* a provider-qualified `channel:model` — the first `:` segment is a channel only when it
  names a configured channel that lists the model; then only that channel serves and
  cross-channel fallback is disabled;

optionally followed by a routing suffix `:nitro` (throughput), `:cheap` (price) or `:fast`
(latency) that overrides the mode for this request. Any other `:` segment stays part of the
model id (`vendor/model:free` is a model id, not a suffix).

For one name the order is: router, exact alias key, glob alias (longest pattern), concrete
model, `channel:model` — aliases sit before models because agents send real model names
(`claude-haiku-4-5`) that the operator redirects. A field whose last segment is a suffix word
is tried, so every id stays reachable,

1. whole, without glob aliases — so a model literally named `x:fast` is served as itself;
2. with the suffix stripped, globs included — `claude-haiku-4-5:fast` reaches the
   `claude-haiku-*` alias, in latency mode;
3. whole, globs included.

Pure and I/O-free.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Literal

from orca_cli.config.compiled import GLOB_CHARS, TARGET_MEMO_MAX
from orca_cli.config.schema import Config
from orca_cli.errors import UnknownModel
from orca_cli.immutable import immutable

__all__ = [
    "ROUTER_PREFIX",
    "SUFFIX_MODE",
    "Mode",
    "Suffix",
    "Target",
    "available_targets",
    "nearest_name",
    "resolve_target",
]

Suffix = Literal["nitro", "cheap", "fast"]
Mode = Literal["balanced", "price", "latency", "throughput"]

SUFFIX_MODE: dict[str, Mode] = {"nitro": "throughput", "cheap": "price", "fast": "latency"}
ROUTER_PREFIX = "orca/"
# The 404 of an unknown name (SPEC §14.4): a plain name this close is a typo of it ("did you
# mean"); a pattern's literal part shorter than this says nothing about a name.
TYPO_RATIO = 0.8
MIN_PATTERN_LITERAL = 3


@immutable
class Target:
    """What the `model` field resolved to.

    `channel` is set for a provider-qualified id: only that channel may serve, and
    cross-channel fallback is disabled. `suffix` overrides the routing mode (`mode_for`).
    """

    kind: Literal["router", "model"]
    router: str | None
    model: str | None
    channel: str | None
    suffix: Suffix | None
    requested: str
    via_alias: str | None
    mode: Mode | None = None  # a route target's `mode` (SPEC §17), over any suffix's

    @property
    def mode_override(self) -> Mode | None:
        """The mode a route target or the suffix forces, or None."""
        if self.mode is not None:
            return self.mode
        return SUFFIX_MODE[self.suffix] if self.suffix is not None else None

    def mode_for(self, configured: Mode) -> Mode:
        """The effective channel-ordering mode: the suffix's, else the configured one."""
        return self.mode_override or configured


def resolve_target(model_field: str, cfg: Config) -> Target:
    """Resolve `model_field` per SPEC §1.3; raise `UnknownModel` listing what is available."""
    # Every request names one of a few targets: each resolved once per config (a Target is
    # immutable, so the one answer serves every request that sends the same field).
    memo = cfg.compiled.target_memo
    known = memo.get(model_field)
    if isinstance(known, Target):
        return known
    found = _resolve_field(model_field, cfg)
    if len(memo) < TARGET_MEMO_MAX:
        memo[model_field] = found
    return found


def _resolve_field(model_field: str, cfg: Config) -> Target:
    """`resolve_target` without the memo."""
    name = model_field.strip()
    if name:
        base, suffix = _split_suffix(name)
        if suffix is None:
            found = _resolve(name, cfg, None, model_field, globs=True)
        else:
            found = _resolve(name, cfg, None, model_field, globs=False)
            if found is None:
                found = _resolve(base, cfg, suffix, model_field, globs=True)
            if found is None:
                found = _resolve(name, cfg, None, model_field, globs=True)
        if found is not None:
            return found
    lead = _suffix_hint(name, cfg) or _channel_hint(name, cfg)
    raise UnknownModel(model_field, available_targets(cfg), lead=lead,
                       hint=None if lead else _hint(name, cfg))


def _hint(name: str, cfg: Config) -> str | None:
    """What the 404 of a name that is simply unknown adds: the nearest configured name and
    the alias that would catch it. (An unknown suffix after a name that resolves, or a
    channel that does not serve the model, is said instead of "unknown model".)"""
    near = nearest_name(name, cfg)
    if near is None:
        return None
    if not GLOB_CHARS & set(near) and SequenceMatcher(None, name.lower(),
                                                        near.lower()).ratio() >= TYPO_RATIO:
        return f"did you mean {near!r}?"  # a typo of a name the sidecar serves
    target = cfg.aliases.get(near, near)
    return (f"the nearest configured name is {near!r}; to serve this one too, add an alias "
            f"such as \"{_pattern_of(name)}\" = \"{target}\" under [aliases]")


def _suffix_hint(name: str, cfg: Config) -> str | None:
    """`orca/coding:bogus`: the name before the last `:` resolves, and the segment after it
    is not a routing suffix."""
    head, sep, last = name.rpartition(":")
    if not sep or not head or not last or last in SUFFIX_MODE:
        return None
    if _resolve(head, cfg, None, name, globs=True) is None:
        return None
    known = ", ".join(f":{word} ({mode})" for word, mode in SUFFIX_MODE.items())
    return (f"unknown routing suffix {':' + last!r} after {head!r}; the known suffixes are "
            f"{known}")


def _channel_hint(name: str, cfg: Config) -> str | None:
    """`sim-cheap:claude-haiku-4-5`: a configured channel that does not list the model; says
    which models it serves, and which channels serve that model."""
    base, _suffix = _split_suffix(name)
    channel, sep, model = base.partition(":")
    ch = cfg.channel(channel) if sep and model else None
    if ch is None or model in ch.models:
        return None
    others = [c.name for c in cfg.enabled_channels() if model in c.models]
    served = (f" ({', '.join(others)} {'does' if len(others) == 1 else 'do'})" if others
              else "")
    listed = ", ".join(ch.models) or "nothing"
    return f"channel {channel!r} does not serve model {model!r}{served}; it serves {listed}"


def _pattern_of(name: str) -> str:
    """`claude-3-5-haiku-20241022` -> `claude-3-5-haiku-*`: the name up to its date or tag."""
    parts = name.split("-")
    for i, part in enumerate(parts):
        if i and ((part.isdigit() and len(part) >= 4) or part in ("latest", "preview")):
            return "-".join(parts[:i]) + "-*"
    return name + "*"


def nearest_name(name: str, cfg: Config) -> str | None:
    """The configured name or alias pattern closest to an unknown `name` (SPEC §14.4): a
    served name spelt nearly so (a typo, `TYPO_RATIO`), else the name or pattern whose literal
    part is closest to as much of the name, so the 404 says which alias to add (a pattern's
    literal of fewer than `MIN_PATTERN_LITERAL` characters is no guide)."""
    keys = (*cfg.aliases, *(ROUTER_PREFIX + r for r in cfg.routers), *cfg.model_ids())
    low = name.lower()
    typo, typo_ratio = None, TYPO_RATIO  # a served name spelt nearly so wins outright
    for key in keys:
        if not GLOB_CHARS & set(key):
            ratio = SequenceMatcher(None, low, key.lower()).ratio()
            if ratio >= typo_ratio:
                typo, typo_ratio = key, ratio
    if typo is not None:
        return typo
    best, best_ratio = None, 0.0
    for key in keys:
        literal = (key.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0] or key).lower()
        if len(literal) < MIN_PATTERN_LITERAL and literal != key.lower():
            continue  # `o[0-9]*`: one letter in common says nothing
        ratio = SequenceMatcher(None, low[: len(literal)], literal).ratio()
        if literal == key.lower():  # a plain name may also be the whole name's near twin
            ratio = max(ratio, SequenceMatcher(None, low, literal).ratio())
        if ratio > best_ratio:
            best, best_ratio = key, ratio
    return best if best_ratio >= 0.6 else None


def available_targets(cfg: Config) -> list[str]:
    """Every name a client may send: `orca/<router>`, alias keys, concrete models (sorted)."""
    names = {ROUTER_PREFIX + r for r in cfg.routers}
    names.update(cfg.aliases)
    names.update(cfg.model_ids())
    return sorted(names)


def _split_suffix(name: str) -> tuple[str, Suffix | None]:
    head, sep, last = name.rpartition(":")
    if sep and head and last in SUFFIX_MODE:
        return head, _as_suffix(last)
    return name, None


def _as_suffix(word: str) -> Suffix | None:
    if word == "nitro":
        return "nitro"
    if word == "cheap":
        return "cheap"
    if word == "fast":
        return "fast"
    return None


def _resolve(
    name: str, cfg: Config, suffix: Suffix | None, requested: str, *, globs: bool
) -> Target | None:
    """Router, then exact alias, then (with `globs`) glob alias, then model / `channel:model`.

    An alias that matches but whose target does not resolve gives None: the alias is the
    operator's intent, so it is never silently bypassed for a same-named model.
    """
    router = _router_name(name, cfg)
    if router is not None:
        return Target("router", router, None, None, suffix, requested, None)
    key = _alias_key(name, cfg, globs=globs)
    if key is not None:
        return _resolve_alias_target(cfg.aliases[key], cfg, suffix, requested, key)
    return _resolve_direct(name, cfg, suffix, requested, None)


def _resolve_direct(
    name: str, cfg: Config, suffix: Suffix | None, requested: str, via: str | None
) -> Target | None:
    """A router, a concrete model or `channel:model` — everything except aliases."""
    router = _router_name(name, cfg)
    if router is not None:
        return Target("router", router, None, None, suffix, requested, via)
    if name in cfg.model_ids():
        return Target("model", None, name, None, suffix, requested, via)
    channel, sep, model = name.partition(":")
    if sep and model:
        ch = cfg.channel(channel)
        if ch is not None and model in ch.models:
            return Target("model", None, model, channel, suffix, requested, via)
    return None


def _router_name(name: str, cfg: Config) -> str | None:
    if name.startswith(ROUTER_PREFIX) and name[len(ROUTER_PREFIX) :] in cfg.routers:
        return name[len(ROUTER_PREFIX) :]
    if name in cfg.routers:
        return name
    return None


def _alias_key(name: str, cfg: Config, *, globs: bool) -> str | None:
    """The exact alias key for `name`, else (with `globs`) the longest matching pattern (ties
    broken by the pattern text), from the patterns the compiled config sorted once."""
    return cfg.compiled.alias_key(name, cfg.aliases, globs=globs)


def _resolve_alias_target(
    target: str, cfg: Config, suffix: Suffix | None, requested: str, key: str
) -> Target | None:
    """One level: the alias target is a router or a model (with its own optional suffix).

    The request's suffix wins over one written in the alias target.
    """
    target = target.strip()
    found = _resolve_direct(target, cfg, suffix, requested, key)
    if found is None:
        base, own = _split_suffix(target)
        if own is not None:
            found = _resolve_direct(base, cfg, suffix or own, requested, key)
    return found
