"""Cross-references: names that must point at something (channel names unique, router pools
and fallbacks naming known models, alias targets resolving)."""

from __future__ import annotations

import difflib

from orca_cli.config.routes import check_routes
from orca_cli.config.schema import Config
from orca_cli.config.walk import Ctx, join_key

__all__ = ["SUFFIXES", "cross_check", "known_models", "unknown_model"]

SUFFIXES = ("nitro", "cheap", "fast")



def known_models(cfg: Config) -> list[str]:
    seen = dict.fromkeys(m for ch in cfg.channels for m in ch.models)
    seen.update(dict.fromkeys(cfg.models))
    return list(seen)


def cross_check(cfg: Config, ctx: Ctx) -> None:
    """Names that must point at something: channel names, router pools, aliases."""
    first: dict[str, int] = {}
    for i, ch in enumerate(cfg.channels):
        if ch.name in first:
            ctx.error(f"channels[{i}].name",
                      f'duplicate channel name "{ch.name}" (also channels[{first[ch.name]}])')
        first.setdefault(ch.name, i)
    if any(e.key.startswith("channels[") and ".models" in e.key for e in ctx.errors):
        return  # a broken `models` list would make every router's models look unknown
    known = known_models(cfg)
    known_set = set(known)
    for name, r in cfg.routers.items():
        rpath = join_key("routers", name)
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
                    ctx.error(f"{rpath}.{key}[{list(full).index(m)}]", unknown_model(m, known))
        _check_providers(cfg, r.providers_allow, f"{rpath}.providers_allow", ctx)
        _check_providers(cfg, r.providers_ignore, f"{rpath}.providers_ignore", ctx)
    for pattern, target in cfg.aliases.items():
        why = _alias_problem(cfg, target, known_set)
        if why:
            ctx.error(join_key("aliases", pattern), why)
    side = cfg.routing.side_router
    if side and side.removeprefix("orca/") not in cfg.routers:
        ctx.error("routing.side_router", f'"{side}" names no router; write "orca/<router>" '
                  f'or "" (the session\'s base pin); routers: {", ".join(cfg.routers) or "none"}')
    check_routes(cfg, ctx, lambda target: _alias_problem(cfg, target, known_set))


def _check_providers(cfg: Config, names: tuple[str, ...], path: str, ctx: Ctx) -> None:
    """SPEC §20: a provider name is a channel's name or a channel type (any case); a typo
    would silently narrow a router to nothing, so it is an error."""
    valid = {ch.name.lower() for ch in cfg.channels} | {ch.type for ch in cfg.channels}
    for i, name in enumerate(names):
        if name.lower() not in valid:
            ctx.error(f"{path}[{i}]", f'"{name}" names no channel and no channel type; '
                      f'channels: {", ".join(ch.name for ch in cfg.channels) or "none"}')


def unknown_model(model: str, known: list[str]) -> str:
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
    if ch is not None:  # `channel:model`, the channel not serving the model: say which do
        model = ":".join(parts[1:])
        others = [c.name for c in cfg.channels if c.enabled and model in c.models]
        serving = f" ({', '.join(others)} {'does' if len(others) == 1 else 'do'})" if others else ""
        return (f'target "{target}": channel "{ch.name}" does not serve "{model}"{serving}; '
                f'it serves {", ".join(ch.models) or "nothing"}')
    return f'target "{target}" is not orca/<router>, a router name or a known model'

