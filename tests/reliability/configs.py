"""Config texts the reliability tests share: a fake provider's channels, and sim channels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from orca_cli.testing import FakeUpstream

__all__ = ["SIM_CODING_ROUTERS", "Channel", "fault_config", "sim_channels"]

# (name, wire format, key, model) of one channel on the fake provider, under prefix `name`.
Channel = tuple[str, str, str, str]

_FAULT_ROUTERS = """
[models.m1]
input = 1.0
[models.m2]
input = 5.0
[models.am1]
input = 1.0
[models.am2]
input = 5.0

[routers.r]
strategy = "cheapest"
mode = "price"
allowed_models = ["m1", "m2"]
strong_pool = ["m2"]
[routers.r.escalation]
mode = "auto"
strikes = {strikes}

[routers.ra]
strategy = "cheapest"
mode = "price"
allowed_models = ["am1", "am2"]
strong_pool = ["am2"]
[routers.ra.escalation]
mode = "auto"
"""


def fault_config(up: FakeUpstream, channels: Sequence[Channel], *, server: Mapping[str, float],
                 strikes: int, urls: Mapping[str, str | None] | None = None) -> str:
    """Router `r` (OpenAI format: m1 base, m2 strong) and router `ra` (Anthropic: am1 base,
    am2 strong), both escalating (`auto`), over `channels` on the fake provider; `urls`
    points a channel elsewhere (a closed port)."""
    out = ["[server]", *(f"{k} = {v:g}" for k, v in server.items()), ""]
    for name, api, key, model in channels:
        url = (urls or {}).get(name) or up.url(name, versioned=api == "openai")
        kind = "openai-compatible" if api == "openai" else "anthropic"
        out += ["[[channels]]", f'name = "{name}"', f'type = "{kind}"', f'base_url = "{url}"',
                f'keys = ["{key}"]', f'models = ["{model}"]', ""]
    return "\n".join(out) + _FAULT_ROUTERS.format(strikes=strikes)


def sim_channels(*, o_keys: int = 1, a_keys: int = 1, o_models: Sequence[str] = ("small-o",),
                 a_models: Sequence[str] = ("small-a",)) -> str:
    """Two sim channels: `sim-o` (OpenAI format) and `sim-a` (Anthropic format)."""
    out = []
    for name, api, keys, models in (("sim-o", "openai", o_keys, o_models),
                                    ("sim-a", "anthropic", a_keys, a_models)):
        key_list = ", ".join(f'"{name}-key-{i + 1}"' for i in range(keys))
        model_list = ", ".join(f'"{m}"' for m in models)
        out += ["[[channels]]", f'name = "{name}"', 'type = "sim"', f'api = "{api}"',
                f"keys = [{key_list}]", f"models = [{model_list}]", ""]
    return "\n".join(out)


# The routers over `sim_channels(o_models=("small-o", "big-o"), a_models=("small-a", "big-a"))`:
# `coding` (session-aware, escalating to the big models) and `background` (stateless).
SIM_CODING_ROUTERS = """
[models.big-o]
input = 5.0
[models.big-a]
input = 5.0

[routers.coding]
strategy = "cheapest"
allowed_models = ["small-o", "big-o", "small-a", "big-a"]
strong_pool = ["big-o", "big-a"]
[routers.coding.escalation]
mode = "auto"
{escalation}
[routers.background]
strategy = "cheapest"
session_aware = false
allowed_models = ["small-o", "small-a"]
"""
