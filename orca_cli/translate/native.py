"""orca's reasoning wrappers in a body sent in its own format (SPEC §13.2 rule 4).

A turn served through translation hands the client its reasoning wrapped in orca's
provenance tag (`common.tag_reasoning`: a Messages `thinking.signature` or a Responses
`reasoning.encrypted_content` starting `orca1.`). When a later turn of the session goes to a
channel that speaks the client's own format, the body is not translated (the raw bytes go
upstream), so the wrapper would reach a provider that never made it. `resolve_wrappers`
treats each wrapped block as the translating path does: reasoning the serving model made
(`policy.keep_reasoning`) gets its original signature / encrypted content back, and any other
is dropped (or with `foreign_reasoning = "as_text"` becomes a `<thinking>` text part) and
counted. Only the wrapped blocks change; everything else in the body is left as it was.

The caller asks `carries_tag` first (a walk of the conversation's blocks, cheaper than a
search of the raw bytes): a body without a tag never comes here, and goes upstream as its raw
bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from orca_cli.translate import anthropic, responses
from orca_cli.translate.claude import (
    SAMPLING_KEYS,
    ClaudeTraits,
    ThinkingForm,
    budget_for,
    lowered_effort,
    relaxed_choice,
)
from orca_cli.translate.claude_turns import fit_turns
from orca_cli.translate.common import TAG, budget_effort, openai_effort, openai_efforts, untag
from orca_cli.translate.model import Reasoning, Text
from orca_cli.translate.policy import (
    ChatToolsEffort,
    keep_reasoning,
    takes_effort_updates,
    takes_reasoning_context,
    thinking_text,
)
from orca_cli.types import Api
from orca_cli.wire.responses_input import effort_updates

__all__ = ["MARKER", "Resolved", "carries_tag", "fit_messages", "fit_openai",
           "resolve_wrappers"]

MARKER = TAG.encode()  # the tag as a raw body holds it

Foreign = Literal["drop", "as_text"]


@dataclass(frozen=True, slots=True)
class Resolved:
    """The body with orca's wrappers resolved: `restored` went back to their own signature or
    encrypted content, `dropped` were foreign to the target."""

    body: dict[str, Any]
    dropped: int
    restored: int
    thinking_off: bool = False  # the body's extended thinking was taken off (`fit_messages`)
    thinking_form: str | None = None  # the thinking form written for the serving model
    sampling_dropped: tuple[str, ...] = ()  # sampling parameters the serving model refuses
    params_dropped: tuple[str, ...] = ()  # parameters the serving model refuses
    params_renamed: tuple[tuple[str, str], ...] = ()  # (old key, new key)


def resolve_wrappers(body: dict[str, Any], api: Api, *, family: str, model: str,
                     foreign: Foreign = "drop") -> Resolved | None:
    """`body` (format `api`) for `model` of `family` in the same format, or None when it holds
    no wrapped reasoning (send it as it is). `body` is never changed: what differs is copied."""
    if api == "anthropic":
        return _messages(body, family, model, foreign)
    if api == "responses":
        return _responses(body, family, model, foreign)
    return None  # Chat Completions answers carry no wrapper (`reasoning_content` is text)


# The field of a Messages reasoning block that holds orca's tag when a translated turn made it
# (keyed by the block's `type`, whatever a client sent there).
_TAGGED_FIELD: dict[object, str] = {"thinking": "signature", "redacted_thinking": "data"}


def carries_tag(body: Any, api: Api) -> bool:
    """Whether `body` (format `api`) holds a reasoning part in orca's tag: a Messages
    `thinking.signature` or `redacted_thinking.data`, or a Responses `reasoning` item's
    `encrypted_content`, that starts with `TAG`. One loop over the conversation's blocks with
    exact class checks and no call a block; the system prompt and tools are never read: an
    agent's first turns cost well under a microsecond, where a search of the raw bytes for
    the tag cost 58 µs on Claude Code's 89 KB opening request (and 128 µs on 200 KB)."""
    if api == "anthropic":
        messages = body.get("messages")
        if messages.__class__ is not list:
            return False
        for msg in messages:
            content = msg.get("content") if msg.__class__ is dict else None
            if content.__class__ is not list:
                continue
            for block in content:
                field = _TAGGED_FIELD.get(block.get("type")) if block.__class__ is dict else None
                if field is None:
                    continue
                value = block.get(field)
                if value.__class__ is str and value.startswith(TAG):
                    return True
        return False
    items = body.get("input")
    if items.__class__ is not list:
        return False
    for item in items:
        if item.__class__ is dict and item.get("type") == "reasoning":
            value = item.get("encrypted_content")
            if value.__class__ is str and value.startswith(TAG):
                return True
    return False


def fit_messages(body: dict[str, Any], traits: ClaudeTraits | None) -> Resolved | None:
    """A Messages body sent in its own format, fitted to the model that serves it, or None when
    it fits as it is (its raw bytes go). What differs is copied; `body` is never changed.

    - **Thinking form** (`translate.claude`): an agent writes the form of the model it asked
      for, and orca may serve another. `{type: "adaptive"}` becomes the budget form for a model
      that knows only that one (Haiku 4.5: the budget from `output_config.effort`, which goes),
      and the budget form becomes adaptive for a model that refuses it (Opus 4.7+, Claude 5:
      the effort from the budget). Other fields of `thinking` (`display`) stay.
    - **Thinking off**: budget-form thinking whose tool loop's last assistant turn opens with no
      thinking block goes, with a `clear_thinking` context edit, which needs thinking. The API
      refuses such a body (400 "a final `assistant` message must start with a thinking block
      … To avoid this requirement, disable `thinking`"), and orca makes it whenever a session
      changes model inside a tool loop — an escalation, a pin that moved for an image or a
      longer context — since the turns another model made carry no thinking block of this
      one's. The translating path leaves thinking off in the same case
      (`anthropic.thinking_fits`); adaptive thinking, which may skip a block, is left alone.
    - **Sampling**: `temperature`, `top_p` and `top_k` go for a model that refuses them.
    - **The latest models** (`claude.ClaudeTraits`): a forced tool call (`tool_choice` `any`
      or `tool`) goes as `auto` where it is refused (Sonnet and Opus 5.5, Fable 5.1+), and
      `thinking: {type: "disabled"}` is left out where it is refused (those, Haiku 5.5, Fable
      and Mythos: their default is adaptive thinking); `thinking.display: "updates"` is left
      out (the model's default display) where it is refused, and so is fast mode (`speed`);
      `params_dropped` names them.
    - **The conversation** (`claude_turns.fit_turns`): what an agent writes for the newest
      models into `messages` — a mid-conversation `role: "system"` message, tool definitions
      added or removed there, a message's own `output_config` — is written the way an earlier
      model takes it (`params_renamed`, `params_dropped`).
    - **Effort**: an `output_config.effort` the model lacks goes as `high`
      (`claude.lowered_effort`)."""
    thinking = body.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    form = traits.thinking if traits is not None else "both"
    sampling = tuple(k for k in SAMPLING_KEYS if k in body) if (
        traits is not None and not traits.sampling) else ()
    choice = body.get("tool_choice")
    relaxed = relaxed_choice(traits, choice)
    unasked = kind == "disabled" and traits is not None and not traits.thinking_off
    display = (traits is not None and not traits.display_updates
               and isinstance(thinking, dict) and thinking.get("display") == "updates")
    slow = traits is not None and not traits.fast_mode and "speed" in body
    turns = fit_turns(body, traits) if traits is not None and not (
        traits.mid_system and traits.tool_changes and traits.turn_effort) else None
    config = body.get("output_config")
    lofty = traits is not None and isinstance(config, dict) and lowered_effort(
        form, config.get("effort")) is not None
    if not (sampling or kind == "enabled" or (kind == "adaptive" and form == "budget")
            or relaxed is not choice or unasked or display or slow or lofty
            or turns is not None):
        return None
    assert thinking is None or isinstance(thinking, dict)
    out = {k: v for k, v in body.items() if k not in sampling and not (slow and k == "speed")}
    notes: tuple[str, ...] = ("speed",) if slow else ()
    renamed: tuple[tuple[str, str], ...] = ()
    if turns is not None:
        out.update(turns.fields)
        notes, renamed = (*notes, *turns.dropped), turns.renamed
    if display:
        assert thinking is not None
        thinking = out["thinking"] = {k: v for k, v in thinking.items() if k != "display"}
        notes = (*notes, "thinking.display")
    if relaxed is not choice:
        out["tool_choice"], notes = relaxed, (*notes, "tool_choice.forced")
    if unasked:  # thinking cannot be turned off: left out, the model's default (adaptive)
        del out["thinking"]
        thinking, notes = None, (*notes, "thinking.disabled")
    written: str | None = None
    if thinking is not None and kind == "adaptive" and form == "budget":
        config = out.get("output_config")
        budget = budget_for(config.get("effort") if isinstance(config, dict) else None,
                            out.get("max_tokens"))
        if budget is None:
            del out["thinking"]
        else:
            out["thinking"] = {**_others(thinking), "type": "enabled", "budget_tokens": budget}
            written = "enabled"
        if isinstance(config, dict) and "effort" in config:
            _set_or_drop(out, "output_config", {k: v for k, v in config.items() if k != "effort"})
    elif thinking is not None and kind == "enabled" and form == "adaptive":
        out["thinking"] = {**_others(thinking), "type": "adaptive"}
        config = out.get("output_config")
        out["output_config"] = {"effort": budget_effort(_int(thinking.get("budget_tokens")))
                                or "high", **(config if isinstance(config, dict) else {})}
        written = "adaptive"
    effort_note = _fit_effort(out, form)
    if effort_note is not None:
        renamed = (*renamed, effort_note)
    now = out.get("thinking")
    if isinstance(now, dict) and now.get("type") == "enabled":
        messages = out.get("messages")
        if isinstance(messages, list) and not anthropic.thinking_fits(messages):
            del out["thinking"]
            written = None
    off = thinking is not None and "thinking" not in out
    if off:
        _without_clear_thinking(out)
    if not (sampling or written or off or notes or renamed):
        return None
    return Resolved(out, 0, 0, off, written, sampling, notes, renamed)


def _fit_effort(out: dict[str, Any], form: ThinkingForm) -> tuple[str, str] | None:
    """`output_config.effort` in `out` lowered where the model's form lacks it
    (`claude.lowered_effort`); the change as a `params_renamed` note, or None."""
    config = out.get("output_config")
    effort = config.get("effort") if isinstance(config, dict) else None
    lowered = lowered_effort(form, effort)
    if lowered is None:
        return None
    assert isinstance(config, dict)
    out["output_config"] = {**config, "effort": lowered}
    return (f"output_config.effort: {effort}", f"output_config.effort: {lowered}")


def fit_openai(body: dict[str, Any], api: Api, reasoning: bool,
               tools_effort: ChatToolsEffort = "any", model: str | None = None
               ) -> Resolved | None:
    """A Chat Completions or Responses body sent in its own format to an OpenAI model, fitted
    to whether that model reasons (`policy.is_reasoning_model`), or None when it fits as it
    is. A router serves a request on a model the client did not name, and OpenAI refuses what
    the other kind takes (400 `unsupported_parameter`):

    - a model that does not reason (`gpt-4.1-mini`) refuses a reasoning effort and GPT-5's
      verbosity — Codex 0.171 sends `reasoning: {effort, context}`, `text: {verbosity}` and
      includes `reasoning.encrypted_content` on every request — so `reasoning` and
      `text.verbosity` (Responses) or `reasoning_effort` and `verbosity` (Chat Completions)
      go, with that `include` entry;
    - a reasoning model refuses `temperature` and `top_p`, which go, and on Chat Completions
      `max_tokens` ("use 'max_completion_tokens' instead"), which is renamed;
    - beside function tools on Chat Completions, GPT-5.2 to 5.5 refuse a `reasoning_effort`,
      which goes, and GPT-5.6 and GPT-6 take only `"none"`, which it becomes
      (`tools_effort`: `policy.chat_tools_effort` of the model; `proxy.xlate` sends such a
      request to the channel's Responses API instead when it speaks it);
    - a model before GPT-5.6 has no `reasoning.context` (Codex sends `"all_turns"`) or
      `reasoning.mode` (pro mode) and refuses `prompt_cache_options` (GPT-5.6's cache TTL and
      mode), which go (`policy.takes_reasoning_context` of the serving `model`; with none
      named, they stay);
    - an effort the serving `model` lacks becomes the nearest it has (`common.openai_effort`:
      Codex's `max` for `gpt-6.2-sol` served on GPT-5.4 goes as `xhigh`);
    - a model before GPT-6 Astra takes no `configuration_update` input item (an effort changed
      mid-conversation), so the items go and the last one's effort, the one this response
      runs at, becomes the request's (`_fold_updates`)."""
    context = model is None or takes_reasoning_context(model)  # GPT-5.6 and later
    folded = _fold_updates(body, api, reasoning, model)
    if folded is not None:
        body = folded[0]
    dropped: tuple[str, ...]
    renamed: tuple[tuple[str, str], ...] = folded[1] if folded is not None else ()
    include = body.get("include") if api == "responses" else None
    encrypted = not reasoning and isinstance(include, list) and _ENCRYPTED in include
    effort_to: str | None = None  # the effort's new value (beside tools, or one it takes)
    if reasoning:
        dropped = ()
        sampling = tuple(k for k in ("temperature", "top_p") if k in body)
        if api == "openai" and "max_tokens" in body and "max_completion_tokens" not in body:
            renamed = (("max_tokens", "max_completion_tokens"),)
        if api == "openai" and tools_effort != "any" and body.get("tools"):
            if tools_effort == "omit" and "reasoning_effort" in body:
                dropped = ("reasoning_effort",)
            elif tools_effort == "none" and body.get("reasoning_effort") != "none":
                effort_to = "none"
                renamed += ((f"reasoning_effort: {body.get('reasoning_effort') or 'unset'}",
                             "reasoning_effort: none"),)
        nearest = None if effort_to or dropped else _nearest_effort(body, api, model)
        if nearest is not None:
            effort_to, note = nearest
            renamed += (note,)
    else:
        sampling = ()
        keys = ("reasoning",) if api == "responses" else ("reasoning_effort", "verbosity")
        dropped = tuple(k for k in keys if k in body)
    text = body.get("text") if api == "responses" and not reasoning else None
    verbose = isinstance(text, dict) and "verbosity" in text
    thought = body.get("reasoning") if api == "responses" and reasoning else None
    unread = () if context or not isinstance(thought, dict) else tuple(
        k for k in _SINCE_5_6 if k in thought)
    if folded is not None:
        dropped = ("input:configuration_update", *dropped)
    if not context and body.get("prompt_cache_options") is not None:
        dropped += ("prompt_cache_options",)
    if not (dropped or sampling or renamed or encrypted or verbose or unread):
        return None
    out = {k: v for k, v in body.items() if k not in dropped and k not in sampling}
    if effort_to is not None and api == "openai":
        out["reasoning_effort"] = effort_to
    elif effort_to is not None:
        assert isinstance(thought, dict)
        out["reasoning"] = thought = {**thought, "effort": effort_to}
    for old, new in renamed:
        if old in out:
            out[new] = out.pop(old)
    if verbose:
        assert isinstance(text, dict)
        _set_or_drop(out, "text", {k: v for k, v in text.items() if k != "verbosity"})
        dropped += ("text.verbosity",)
    if unread:
        assert isinstance(thought, dict)
        _set_or_drop(out, "reasoning", {k: v for k, v in thought.items() if k not in unread})
        dropped += tuple(f"reasoning.{k}" for k in unread)
    if encrypted:
        assert isinstance(include, list)
        _set_or_drop(out, "include", [i for i in include if i != _ENCRYPTED])
        dropped += (f"include:{_ENCRYPTED}",)
    return Resolved(out, 0, 0, sampling_dropped=sampling, params_dropped=dropped,
                    params_renamed=renamed)


_ENCRYPTED = "reasoning.encrypted_content"
# What the Responses API's `reasoning` holds from GPT-5.6 on: which earlier turns' reasoning
# the model reads (`context`) and pro mode (`mode: "pro"`).
_SINCE_5_6 = ("context", "mode")


def _fold_updates(body: dict[str, Any], api: Api, reasoning: bool, model: str | None
                  ) -> tuple[dict[str, Any], tuple[tuple[str, str], ...]] | None:
    """A Responses body without its `configuration_update` items, its `reasoning.effort` the
    last item's (for a model that reasons), with that change as `params_renamed` notes, for a
    `model` that takes no such item; None when there is none or `model` takes them. Only a
    body that names a model taking them is looked through (a client writes the items for the
    model it asked for; Codex for a model of its catalog that `supports_reasoning_effort_
    updates`): the walk costs 23 µs on a 600-item body, which most requests need not pay."""
    if api != "responses" or model is None or takes_effort_updates(model):
        return None
    asked = body.get("model")
    if not isinstance(asked, str) or not takes_effort_updates(asked):
        return None
    updates = effort_updates(body)
    if not updates:
        return None
    out = {**body, "input": [i for i in body["input"] if not (
        isinstance(i, dict) and i.get("type") == "configuration_update")]}
    thought = body.get("reasoning")
    was = thought.get("effort") if isinstance(thought, dict) else None
    last = updates[-1]
    if not reasoning or not isinstance(last, str) or last == was:
        return out, ()
    out["reasoning"] = {**(thought if isinstance(thought, dict) else {}), "effort": last}
    return out, ((f"reasoning.effort: {was or 'unset'}", f"reasoning.effort: {last}"),)


def _nearest_effort(body: dict[str, Any], api: Api,
                    model: str | None) -> tuple[str, tuple[str, str]] | None:
    """The effort `body` asks, as `model` takes it, with the change as a `params_renamed`
    note, when that differs; None when it is the same, or `model`'s efforts are unknown."""
    if model is None or openai_efforts(model, api) is None:
        return None
    thought = body.get("reasoning") if api == "responses" else None
    effort = (thought.get("effort") if isinstance(thought, dict)
              else body.get("reasoning_effort") if api == "openai" else None)
    if not isinstance(effort, str):
        return None
    fitted = openai_effort(effort, model, api)
    if fitted == effort or fitted is None:
        return None
    key = "reasoning.effort" if api == "responses" else "reasoning_effort"
    return fitted, (f"{key}: {effort}", f"{key}: {fitted}")


def _set_or_drop(body: dict[str, Any], key: str, value: dict[str, Any] | list[Any]) -> None:
    """`body[key] = value`, or no `key` at all when `value` is empty."""
    if value:
        body[key] = value
    else:
        body.pop(key, None)


def _others(thinking: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in thinking.items() if k not in ("type", "budget_tokens")}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _without_clear_thinking(body: dict[str, Any]) -> None:
    """Drop a `clear_thinking_*` context edit from a body whose thinking went off."""
    cm = body.get("context_management")
    edits = cm.get("edits") if isinstance(cm, dict) else None
    if not isinstance(edits, list):
        return
    kept = [e for e in edits if not (isinstance(e, dict)
                                     and str(e.get("type", "")).startswith("clear_thinking"))]
    if len(kept) == len(edits):
        return
    assert isinstance(cm, dict)
    _set_or_drop(body, "context_management",
                 {**cm, "edits": kept} if kept or len(cm) > 1 else {})


def _wrapped_thinking(block: object) -> Reasoning | None:
    if not isinstance(block, dict):
        return None
    field = _TAGGED_FIELD.get(block.get("type"))
    value = block.get(field) if field is not None else None
    return untag(value) if isinstance(value, str) else None


def _messages(body: dict[str, Any], family: str, model: str, foreign: Foreign) -> Resolved | None:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    out: list[Any] | None = None
    dropped = restored = 0
    for i, msg in enumerate(messages):
        content = msg.get("content") if isinstance(msg, dict) else None
        if not isinstance(content, list):
            continue
        blocks: list[Any] | None = None
        for j, block in enumerate(content):
            part = _wrapped_thinking(block)
            if part is None:
                if blocks is not None:
                    blocks.append(block)
                continue
            if blocks is None:
                blocks = content[:j]
            if keep_reasoning(part, "anthropic", family, model):
                blocks.append(anthropic.reasoning_block(part))
                restored += 1
                continue
            dropped += 1
            if foreign == "as_text" and part.text:
                blocks.append({"type": "text", "text": thinking_text(part)})
        if blocks is None:
            continue
        if out is None:
            out = list(messages)
        out[i] = {**msg, "content": blocks}
    if out is None:
        return None
    # A turn left with no block at all goes (the API refuses empty content; adjacent turns of
    # one role are joined by the API, as the translating path joins them itself).
    kept = [m for m in out if not (isinstance(m, dict) and m.get("content") == [])]
    new = {**body, "messages": kept}
    thinking = new.get("thinking")
    off = (isinstance(thinking, dict) and thinking.get("type") != "disabled"
           and not anthropic.thinking_fits(kept))
    if off:
        del new["thinking"]  # as the translating path: a tool loop's thinking block is gone
    return Resolved(new, dropped, restored, off)


def _responses(body: dict[str, Any], family: str, model: str,
               foreign: Foreign) -> Resolved | None:
    items = body.get("input")
    if not isinstance(items, list):
        return None
    out: list[Any] | None = None
    dropped = restored = 0
    for i, item in enumerate(items):
        part = None
        if isinstance(item, dict) and item.get("type") == "reasoning":
            value = item.get("encrypted_content")
            part = untag(value) if isinstance(value, str) else None
        if part is None:
            if out is not None:
                out.append(item)
            continue
        if out is None:
            out = items[:i]
        if keep_reasoning(part, "responses", family, model):
            out.append(responses.reasoning_item(part))
            restored += 1
            continue
        dropped += 1
        if foreign == "as_text" and part.text:
            out.extend(responses.output_items([Text(thinking_text(part))], "assistant"))
    if out is None:
        return None
    return Resolved({**body, "input": out}, dropped, restored)
