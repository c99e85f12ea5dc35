"""What a Claude model takes of the Messages API's generation parameters, judged by its id
(SPEC §13.2): which form of extended thinking, and whether sampling parameters.

Anthropic changed both across generations, and a request written for one model is refused by
another:

- Claude 4.5 and earlier (Haiku 4.5 included) know only the budget form, `thinking: {type:
  "enabled", budget_tokens}`; they refuse `{type: "adaptive"}` and its `output_config.effort`.
- Opus 4.6 and Sonnet 4.6 take both (the budget form deprecated there).
- Opus 4.7 and later, every Claude 5 model, Fable and Mythos take only the adaptive form (400
  `"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and
  "output_config.effort"`), and refuse `temperature`, `top_p` and `top_k`.
- Sonnet 5.5, Opus 5.5 and Fable 5.1 and later also refuse a forced tool call (`tool_choice`
  `any` or `tool`); they, Haiku 5.5 (adaptive thinking only, on by default), every Fable and
  Mythos refuse `thinking: {type: "disabled"}` (Sonnet 5.5 asks for `between_tools` instead).

What a conversation may hold changed too. A `role: "system"` message inside `messages` (a
mid-conversation system message) is taken from Opus 4.8 on (every Claude 5 model, Fable and
Mythos); earlier models answer 400. Tool definitions added or removed there
(`tool_addition` / `tool_removal` blocks of such a message) are taken by Opus 4.8, Opus 5,
Fable and the 5.5 generation; a message's own `output_config` (a per-turn effort) by the 5.5
generation and Fable 5.1+; `thinking.display: "updates"` by Sonnet and Opus 5.5 and Fable.
Fast mode (`speed: "fast"`) is taken by Opus 5 and 5.5 and Fable and Mythos 5.2 (Opus 4.8's
was removed on 2026-11-30); other models refuse the field.
Claude Code 2.1.332 writes these for its default `claude-opus-5-5` (fast mode after `/fast`)
and none of them for `claude-haiku-4-5` or `claude-sonnet-4-6`, whose environment notes go as
`<system-reminder>` text in the user turn instead (its own model table, captured requests).
`output_config.effort` `max` came with the 4.6 generation and `xhigh` with Opus 4.7.

An agent writes the form of the model it asked for: Claude Code 2.1.332 sends `{type:
"adaptive"}` with `output_config.effort` for `claude-opus-5-5` and a budget for
`claude-haiku-4-5`. A router that serves the request on another model writes that model's
form (`native.fit_messages` on the same-format path, `anthropic.encode_request` when
translating). An id this does not recognise as Claude's is left as it is.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Literal, NamedTuple

from orca_cli.translate.common import budget_effort

__all__ = ["EFFORT_BUDGET", "SAMPLING_KEYS", "ClaudeTraits", "ThinkingForm", "budget_for",
           "claude_traits", "forces_tool", "lowered_effort", "relax_tool_choice",
           "relaxed_choice", "takes_sampling", "thinking_for"]

ThinkingForm = Literal["budget", "adaptive", "both"]

# An OpenAI reasoning effort (or Anthropic's `output_config.effort`) as a thinking budget.
EFFORT_BUDGET = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576, "xhigh": 32768,
                 "max": 32768}
SAMPLING_KEYS = ("temperature", "top_p", "top_k")


class ClaudeTraits(NamedTuple):
    thinking: ThinkingForm
    sampling: bool  # takes temperature, top_p and top_k
    forced_tools: bool = True  # takes tool_choice `any` / `tool`
    thinking_off: bool = True  # takes thinking {type: "disabled"}
    mid_system: bool = False  # takes `role: "system"` messages inside `messages`
    tool_changes: bool = False  # takes `tool_addition` / `tool_removal` blocks there
    turn_effort: bool = False  # takes a message's own `output_config`
    display_updates: bool = False  # takes `thinking.display: "updates"`
    fast_mode: bool = False  # takes `speed: "fast"` (Opus 5 and 5.5, Fable and Mythos 5.2+)


# `claude-<family>-<major>[-<minor>]` (a dated snapshot's 8 digits are no minor), the older
# `claude-<major>[-<minor>]-<family>`, anywhere in the id: `anthropic/claude-sonnet-4.5`
# (OpenRouter), `anthropic.claude-opus-4-6-v1` (Bedrock) and `claude-haiku-4-5-20251001` too.
_ID = re.compile(r"claude-(?:(opus|sonnet|haiku|fable|mythos)-(\d+)(?:[-.](\d{1,2})(?!\d))?"
                 r"|(\d+)(?:[-.](\d)(?!\d))?-(opus|sonnet|haiku))")


@functools.lru_cache(maxsize=256)
def claude_traits(model: str) -> ClaudeTraits | None:
    """What the Claude model `model` (an upstream id) takes, or None for an id that is not
    recognisably Claude's."""
    m = _ID.search(model.lower())
    if m is None:
        return None
    family = m.group(1) or m.group(6)
    version = (int(m.group(2) or m.group(4)), int(m.group(3) or m.group(5) or 0))
    latest = version >= (5, 5) or (family == "fable" and version >= (5, 1))
    forcing = not latest or family == "haiku"  # Haiku 5.5's migration guide names no forcing
    if family in ("fable", "mythos") or version >= (5, 0) or (
            family == "opus" and version >= (4, 7)):
        opus48 = family == "opus" and version >= (4, 8)
        return ClaudeTraits(
            "adaptive", False, forcing,
            thinking_off=not latest and family not in ("fable", "mythos"),
            mid_system=opus48 or family in ("fable", "mythos") or version >= (5, 0),
            tool_changes=opus48 or latest or family == "fable",
            turn_effort=latest,
            display_updates=family == "fable" or (latest and family != "haiku"),
            fast_mode=(family == "opus" and version >= (5, 0)) or (
                family in ("fable", "mythos") and version >= (5, 2)))
    if version >= (4, 6):
        return ClaudeTraits("both", True)
    return ClaudeTraits("budget", True)


def budget_for(effort: object, max_tokens: object) -> int | None:
    """The thinking budget of an adaptive request's `effort` ("high" when unset, the API's
    default) on a model of the budget form: below `max_tokens`, as the API requires, and at
    least its minimum of 1,024; None when `max_tokens` leaves no room for that."""
    budget = EFFORT_BUDGET.get(effort if isinstance(effort, str) else "high", EFFORT_BUDGET["high"])
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
        budget = min(budget, max_tokens - 1)
    return budget if budget >= 1024 else None


# An OpenAI reasoning effort as the adaptive form's `output_config.effort` (low, medium, high).
_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}


def thinking_for(model: str, effort: str | None, budget: int | None, max_tokens: int,
                 ) -> tuple[dict[str, Any] | None, str | None]:
    """The `thinking` a request translated to Messages asks `model` for, and the adaptive
    form's `output_config.effort`, from the client's reasoning effort or budget: the adaptive
    form for a model that takes it, else a budget below `max_tokens`; (None, None) when the
    client asked for no reasoning (or the budget does not fit)."""
    traits = claude_traits(model)
    if traits is not None and traits.thinking != "budget":
        adaptive = _EFFORT.get(effort or "") or budget_effort(budget)
        return ({"type": "adaptive"}, adaptive) if adaptive else (None, None)
    wanted = budget or EFFORT_BUDGET.get(effort or "", 0)
    if wanted and wanted < max_tokens:
        return {"type": "enabled", "budget_tokens": max(wanted, 1024)}, None
    return None, None


# The efforts a model of a thinking form does not take: `max` came with the 4.6 generation,
# `xhigh` with Opus 4.7 (Anthropic's effort docs; Claude Code sends `high` for either there).
_LACKS: dict[str, tuple[str, ...]] = {"budget": ("max", "xhigh"), "both": ("xhigh",)}


def lowered_effort(form: ThinkingForm, effort: object) -> str | None:
    """`high` when a model of `form` lacks the `output_config.effort` asked, else None."""
    return "high" if effort in _LACKS.get(form, ()) else None


def takes_sampling(model: str) -> bool:
    """Whether `model` takes `temperature`, `top_p` and `top_k` (an id not Claude's does)."""
    traits = claude_traits(model)
    return traits is None or traits.sampling


def relax_tool_choice(model: str, choice: dict[str, Any] | None) -> dict[str, Any] | None:
    """A Messages `tool_choice` as `model` takes it: a forced call (`any`, or `tool` with its
    `name`) becomes `auto` for a model that refuses forcing (the tools stay, and the
    client's instructions steer), other fields kept; anything else as it is."""
    out: dict[str, Any] | None = relaxed_choice(claude_traits(model), choice)
    return out


def relaxed_choice(traits: ClaudeTraits | None, choice: Any) -> Any:
    """`relax_tool_choice` for a model of `traits`."""
    if traits is None or traits.forced_tools or not forces_tool(choice):
        return choice
    return {**{k: v for k, v in choice.items() if k != "name"}, "type": "auto"}


def forces_tool(choice: object) -> bool:
    """Whether a Messages `tool_choice` forces a call (`any`, or `tool` with its name): what
    extended thinking never goes beside, and what the latest models refuse."""
    return isinstance(choice, dict) and choice.get("type") in ("any", "tool")
