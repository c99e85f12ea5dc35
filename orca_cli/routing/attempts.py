"""The upstream attempt list of a plan, a router's model picked by a request's mode, and the
refusal of a request whose provider preferences leave nothing (SPEC §7, §20). Pure.

Attempt order: the pinned (channel, key), the chosen model's channels and keys in their
order, the fallback models' (each a usable candidate of the tier), and last the drained
(weight-0) channels of those models: a draining admin keeps a channel out of the traffic,
but a request whose weighted channels all failed is still served there rather than handed
the provider's error (before any breaker opens, as after). A request's
`provider.allow_fallbacks: false` keeps the first attempt's channel only (its other keys
stay: the same provider), no other channel, no fallback model, no drained channel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from orca_cli.config.schema import Config
from orca_cli.routing.candidates import Candidate
from orca_cli.routing.modes import Measured, ProviderPrefs, mode_key
from orca_cli.routing.route_types import Attempt
from orca_cli.routing.strategies import Ranking
from orca_cli.routing.target import Mode

__all__ = ["MAX_ATTEMPTS", "MAX_FALLBACK_MODELS", "build_attempts", "provider_refusal",
           "rank_by_mode"]

MAX_FALLBACK_MODELS = 8
MAX_ATTEMPTS = 32  # a bound on the attempt list; the deadline and retry budget bind first


def build_attempts(model: str, candidates: Sequence[Candidate],
                   first: tuple[str, int, str] | None, fallbacks: Sequence[str],
                   with_fallbacks: bool, prefs: ProviderPrefs | None) -> tuple[Attempt, ...]:
    """Pinned (channel, key) first, then the model's channels and keys, then `fallbacks`
    (when `with_fallbacks`), then the drained channels; see the module docstring."""
    out: list[Attempt] = []
    seen: set[tuple[str, str, int]] = set()
    if first is not None:
        # first[2]: "pin" or "affinity" (`route._first_channel`)
        out.append(Attempt(model, first[0], first[1], first[2]))  # type: ignore[arg-type]
        seen.add((model, first[0], first[1]))
    by_model: dict[str, Candidate] = {}
    for x in candidates:  # a loop: a dict comprehension is a call on CPython 3.11
        if x.excluded is None:
            by_model[x.model] = x
    models = [model]
    if with_fallbacks:
        # Fallback models in order, each re-checked: it must be a usable candidate of this
        # tier's pool (policy, tier and caps were applied when the pool was built), or of a
        # route target's own list (SPEC §17).
        models += [fb for fb in fallbacks[:MAX_FALLBACK_MODELS] if fb != model]
    # The models' channels and keys in order, then their drained channels: each (model,
    # channel, key) once, at most MAX_ATTEMPTS (inline: a helper's call per channel costs
    # more than the walk).
    for drained in (False, True):
        for i, m in enumerate(models):
            cand = by_model.get(m)
            if cand is None:
                continue
            source: Literal["ranked", "fallback", "drained"] = (
                "drained" if drained else "ranked" if i == 0 else "fallback")
            for ch in cand.drained if drained else cand.channels:
                for k in ch.keys:
                    key = (m, ch.channel, k)
                    if key not in seen and len(out) < MAX_ATTEMPTS:
                        seen.add(key)
                        out.append(Attempt(m, ch.channel, k, source))
    if prefs is not None and not prefs.allow_fallbacks and out:
        return tuple(a for a in out if (a.model, a.channel) == (out[0].model, out[0].channel))
    return tuple(out)


def rank_by_mode(candidates: Sequence[Candidate], mode: Mode, cfg: Config,
                 measured: Measured, among: Sequence[str] | None = None) -> Ranking:
    """A router's models for a request's `:cheap` / `:fast` / `:nitro` (or `routing.mode`):
    the usable candidates of the resolved tier (or `among`, the strategy's eligible ones)
    by their first channel's figure — the cheapest effective price, the lowest latency, the
    highest throughput; models without a figure after, in their given order."""
    usable = {c.model: c for c in candidates if c.excluded is None and c.channels}
    names = [m for m in (among if among is not None else usable) if m in usable]
    scores: dict[str, float] = {}
    for m in names:
        ch = cfg.channel(usable[m].channels[0].channel)
        key = mode_key(mode, ch, m, cfg, measured) if ch is not None else None
        if key is not None:
            scores[m] = key
    known = sorted((m for m in names if m in scores), key=lambda m: scores[m])
    ordered = tuple(known + [m for m in names if m not in scores])
    return Ranking(ordered, scores, f"mode {mode}: the tier's models by "
                   f"{'price' if mode == 'price' else 'measured ' + mode}")


def provider_refusal(candidates: Sequence[Candidate]) -> tuple[int, str, str] | None:
    """A 404 when the request's own `provider.only` / `provider.ignore` left no candidate a
    channel (a client's choice, not a server fault); None otherwise."""
    if not candidates or any(c.excluded is None for c in candidates):
        return None
    if not any(why == "provider_request" for c in candidates for _, why in c.filtered):
        return None
    models = ", ".join(c.model for c in candidates)
    return 404, "no_allowed_providers", (
        f"no allowed provider serves this request: the request's provider.only / "
        f"provider.ignore leave no channel for {models} (channels are named by name or type)")
