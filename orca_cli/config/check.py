"""`orca config check`'s findings beyond load-time validation (SPEC §2)."""

from __future__ import annotations

import dataclasses
from typing import Literal

from orca_cli.config.schema import ChannelConfig, Config
from orca_cli.config.walk import join_key
from orca_cli.config.xref import known_models, unknown_model
from orca_cli.immutable import immutable
from orca_cli.translate.common import gpt_version
from orca_cli.translate.policy import chat_tools_effort, is_reasoning_model

__all__ = ["ConfigIssue", "check"]



@immutable
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
    with no candidate for an inbound format (with `[translation] enabled = false`), and a few
    likely mistakes, are warnings."""
    out: list[ConfigIssue] = []

    def add(sev: Literal["error", "warning"], key: str, why: str) -> None:
        out.append(ConfigIssue(sev, key, why, cfg.source))

    known = set(known_models(cfg))
    enabled_by_api: dict[str, set[str]] = {"openai": set(), "anthropic": set()}
    served: set[str] = set()
    for ch in cfg.enabled_channels():
        for api in ch.apis:
            enabled_by_api.setdefault(api, set()).update(ch.models)
        served.update(ch.models)
    for name, r in cfg.routers.items():
        rpath = join_key("routers", name)
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
                add("error", f"{rpath}.escalation.pool", unknown_model(unknown[0], sorted(known)))
            tiers["strong"] = pool
        # With translation on, a channel of any format serves any inbound format (SPEC §13.2):
        # a tier without a channel of the inbound format is served translated, not refused.
        for tier, models in tiers.items() if not cfg.translation.enabled else ():
            for api in ("openai", "anthropic"):
                if not any(m in enabled_by_api[api] for m in models):
                    add("warning", rpath,
                        f'the {tier} tier has no model served by an enabled channel with api = '
                        f'"{api}"; {api}-format requests to this router cannot be served {tier}')
        for tier, models in tiers.items():
            if models and all(m in cfg.models and not cfg.models[m].vision for m in models):
                add("warning", rpath,
                    f"every model of the {tier} tier reads no images (vision = false): a "
                    f"request carrying an image or a PDF cannot be served {tier} by this router")
        for m in r.allowed_models + r.escalation_pool:
            if m in known and m not in served:
                add("warning", rpath, f'model "{m}" is served by no enabled channel')
    for i, ch in enumerate(cfg.channels):
        keyless_ok = ch.pass_through_auth or ch.type in ("sim", "openai-compatible")
        if ch.enabled and not ch.keys and not keyless_ok:
            add("warning", f"channels[{i}].keys", f'channel "{ch.name}" is enabled but has no keys')
        chat_only = _tools_lose_effort(cfg, ch) if ch.enabled else {}
        if chat_only:
            lose, refuse = chat_only.get("effort", []), chat_only.get("tools", [])
            parts = []
            if lose:
                parts.append(f"{', '.join(lose)} refuse{'s' if len(lose) == 1 else ''} a "
                             "reasoning effort beside function tools, so an agent's tool turns "
                             "go there without it")
            if refuse:
                parts.append(f"{', '.join(refuse)} take{'s' if len(refuse) == 1 else ''} "
                             "function tools only on the Responses API, so an agent's tool "
                             "turns go to another model")
            why = "; ".join(parts)
            add("warning", f"channels[{i}].api",
                f'channel "{ch.name}" speaks only Chat Completions, where {why}; '
                'OpenAI\'s API speaks both: api = ["responses", "openai"]')
    for m in sorted(served - set(cfg.models)):
        add("warning", join_key("models", m), "has no [models] table: its cost counts as 0")
    for m, mc in sorted(cfg.models.items()):
        v = gpt_version(m)
        if v is not None and v[:2] >= (5, 6) and mc.cache_write < WRITE_FROM_5_6:
            add("warning", join_key("models", m) + ".cache_write",
                f"is {mc.cache_write:g}, but GPT-5.6 and later bill a prompt-cache write at "
                f"{WRITE_FROM_5_6:g}x the input price: spend and budgets count those writes low")
    features = dataclasses.fields(cfg.difficulty)
    total = sum(getattr(cfg.difficulty, f.name).weight for f in features)
    if total > 1 + 1e-9:
        add("warning", "difficulty", f"feature weights sum to {total:.3f} > 1: scores can exceed 1")
    return out


# OpenAI bills a prompt-cache write from GPT-5.6 on (earlier models write for free), at 1.25x
# the input price; the usage reports it as `cache_write_tokens`.
WRITE_FROM_5_6 = 1.25


def _tools_lose_effort(cfg: Config, ch: ChannelConfig) -> dict[str, list[str]]:
    """The reasoning models `ch` serves on OpenAI's own Chat Completions only whose function
    tools go there without a reasoning effort (`effort`), or not at all (`tools`: the model
    takes them only on the Responses API; `translate.policy.chat_tools_effort`)."""
    if "responses" in ch.apis:
        return {}
    out: dict[str, list[str]] = {}
    for m in ch.models:
        upstream = ch.upstream_model(m)
        facts = cfg.models.get(m)
        rule = chat_tools_effort(upstream, ch.type)
        if rule != "any" and is_reasoning_model(upstream, facts.reasoning if facts else None):
            out.setdefault("tools" if rule == "responses" else "effort", []).append(m)
    return out
