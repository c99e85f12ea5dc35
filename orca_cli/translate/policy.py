"""The target-dependent rules applied to a decoded request before it is encoded (SPEC §13.2).

- Reasoning provenance (rule 4): a reasoning part goes to the target only when the target is
  the family *and* model that made it (a part whose model is unknown — a raw signature or
  encrypted blob in the client's history — needs the family only) and the target's format can
  carry what the part holds (a signature or redacted data for Anthropic, encrypted content
  for Responses, text for Chat Completions, i.e. DeepSeek's `reasoning_content`). Any other
  is dropped, or with `foreign_reasoning = "as_text"` becomes a `<thinking>` text part; each
  is counted.
- Cache markers (rule 2): towards Anthropic the client's markers are cleared here, and with
  `anthropic_cache = "auto"` the Anthropic encoder places orca's own (`anthropic_marks`): at
  the end of tools+system (the last system text block, else the last tool) and on the
  message blocks — at most 4 in all; ttl "1h" when asked.
  Towards the other formats markers are ignored by the encoders (those cache automatically).
- Content (rule 5): what the target cannot express is listed as `untranslatable`.
- The target model's facts: a reasoning model gets the reasoning effort and no sampling
  parameters (`temperature`, `top_p`: OpenAI's reasoning models refuse them), and a
  `max_tokens` above the model's `max_output_tokens` is lowered to it (providers refuse a
  larger ask rather than cut it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from orca_cli.immutable import immutable
from orca_cli.translate.common import first_gpt6, gpt_version
from orca_cli.translate.model import Document, Message, Part, Reasoning, Request, Text
from orca_cli.types import Api

__all__ = ["CHAT_TOOLS", "OPENAI_API_TYPES", "ChatToolsEffort", "PolicyResult",
           "TranslationOptions", "apply_head", "apply_messages", "apply_policy", "chat_tools_effort",
           "is_reasoning_model", "keep_reasoning", "takes_effort_updates",
           "takes_reasoning_context", "thinking_text"]

# What a Chat Completions body with function tools may carry as `reasoning_effort`
# (`chat_tools_effort`): any, none at all, only "none", or no such body is taken at all.
ChatToolsEffort = Literal["any", "omit", "none", "responses"]
# The untranslatable feature of function tools on Chat Completions for a model that takes them
# only on the Responses API (`chat_tools_effort` "responses").
CHAT_TOOLS = "tools:chat_completions"


@immutable
class TranslationOptions:
    anthropic_cache: Literal["auto", "off"] = "auto"
    foreign_reasoning: Literal["drop", "as_text"] = "drop"
    cache_ttl_1h: bool = False
    target_reasoning: bool = False  # the target model reasons (effort sent, no temperature)
    anthropic_max_tokens: int = 8192  # Messages requires max_tokens; used when none was set
    inbound_family: str | None = None  # who made raw reasoning in the client's history
    max_tokens_cap: int | None = None  # the target model's output limit (a larger ask is cut)
    # `chat_tools_effort` of the target ("any" where it is not OpenAI's own API)
    chat_tools_effort: ChatToolsEffort = "any"


# Reasoning models by id, where `[models] reasoning` does not say: OpenAI's o-series, GPT-5
# and later (GPT-6 Astra, Sol and Luna; not GPT-5's `-chat` variants), DeepSeek's reasoner,
# Gemini 2.5 and later. They reject or ignore sampling parameters and take a reasoning effort.
_REASONING_IDS = re.compile(
    r"(?:^|/)(?:o[134](?:-|$)|gpt-(?:[5-9]|[1-9]\d)(?![.\d]*-chat)|deepseek-reasoner"
    r"|gemini-(?:2\.5|[3-9]))")


def is_reasoning_model(model: str, declared: bool | None = None) -> bool:
    """Whether `model` reasons: what the config declared, else judged by its id."""
    if declared is not None:
        return declared
    return _REASONING_IDS.search(model.lower()) is not None


# Channel types that reach OpenAI's own Chat Completions (or Azure's, which answers alike). A
# router (OpenRouter) answers by its own rules.
OPENAI_API_TYPES = frozenset({"openai", "openai-compatible"})


def chat_tools_effort(model: str, channel_type: str = "openai") -> ChatToolsEffort:
    """What a Chat Completions request with function tools may carry as `reasoning_effort` to
    the OpenAI model `model` on a channel of `channel_type`: any (`any`), none at all
    (`omit`), only `"none"` (`none`), or nothing: no Chat Completions request with function
    tools is taken (`responses`).

    OpenAI's recent reasoning models refuse function tools beside a reasoning effort on Chat
    Completions (400 "Function tools with reasoning_effort are not supported for gpt-5.4 in
    /v1/chat/completions. Please use /v1/responses instead."): GPT-5.2 to 5.5 (not their mini
    and nano) take the tools when the effort is left out; GPT-5.6, GPT-6 Sol and GPT-6 Luna,
    which apply a default effort, only with `reasoning_effort: "none"` ("… or set
    reasoning_effort to 'none'"); GPT-6 Astra, GPT-6.1 Sol and later have no `none` ("support
    Chat Completions, but tool calling requires Responses"). The Responses API takes both."""
    v = gpt_version(model) if channel_type in OPENAI_API_TYPES else None
    if v is None:
        return "any"
    if v.major >= 6 and not first_gpt6(v):
        return "responses"
    if v[:2] >= (5, 6):
        return "none"
    return "omit" if (5, 2) <= v[:2] <= (5, 5) and not v.rest.startswith(
        ("-mini", "-nano")) else "any"


def takes_reasoning_context(model: str) -> bool:
    """Whether the OpenAI model `model` takes the Responses API's `reasoning.context` (which
    earlier turns' reasoning it reads; Codex 0.171 sends `"all_turns"`): GPT-5.6 and later
    only."""
    v = gpt_version(model)
    return v is not None and v[:2] >= (5, 6)


def takes_effort_updates(model: str) -> bool:
    """Whether the OpenAI model `model` takes `configuration_update` input items (a reasoning
    effort changed mid-conversation): GPT-6 Astra and the GPT-6 models after it, not GPT-6 Sol
    and Luna ("Before Astra, effort was a request-level setting on OpenAI models"; Codex's
    model catalog, `supports_reasoning_effort_updates`)."""
    v = gpt_version(model)
    return v is not None and v.major >= 6 and not first_gpt6(v)


@dataclass(slots=True)
class PolicyResult:
    dropped_reasoning: int = 0
    cache_ttl: str | None = None  # the breakpoints to place (anthropic.encode_request)
    untranslatable: list[str] = field(default_factory=list)


def keep_reasoning(part: Reasoning, dst: Api, family: str, model: str) -> bool:
    """Whether `part` may be sent to `model` of `family` in format `dst`."""
    if part.family != family or (part.model is not None and part.model != model):
        return False
    if dst == "anthropic":
        return part.signature is not None or part.redacted is not None
    if dst == "responses":
        return part.encrypted is not None
    return bool(part.text)


def thinking_text(part: Reasoning) -> str:
    """A foreign reasoning part as text (`foreign_reasoning = "as_text"`)."""
    return f"<thinking>\n{part.text}\n</thinking>"


def _reasoning(messages: list[Message], dst: Api, family: str, model: str,
               options: TranslationOptions) -> int:
    dropped = 0
    for msg in messages:
        for p in msg.parts:
            if type(p) is Reasoning:
                break
        else:
            continue
        parts: list[Part] = []
        for p in msg.parts:
            if not isinstance(p, Reasoning) or keep_reasoning(p, dst, family, model):
                parts.append(p)
                continue
            dropped += 1
            if options.foreign_reasoning == "as_text" and p.text:
                parts.append(Text(thinking_text(p)))
        msg.parts = parts
    return dropped


def apply_messages(
    messages: list[Message], dst: Api, family: str, model: str, options: TranslationOptions
) -> tuple[int, list[str]]:
    """The rules that apply message by message (reasoning provenance, markers cleared towards
    Anthropic, parts the target cannot take): the reasoning parts dropped and the
    untranslatable features found. The same for a message whatever the conversation around
    it, so its translation can be kept and reused (`api.translate_request`'s memo)."""
    dropped = _reasoning(messages, dst, family, model, options)
    found: list[str] = []
    if dst == "anthropic":
        for msg in messages:
            for p in msg.parts:
                p.cache = None
    elif dst == "openai":
        for msg in messages:
            for p in msg.parts:
                if isinstance(p, Document) and p.url is not None and p.data is None:
                    found.append("document_url")
    return dropped, found


def apply_head(req: Request, dst: Api, options: TranslationOptions,
               found: list[str]) -> PolicyResult:
    """The rules for what is not a message (system, tools, parameters) and the report's
    untranslatable list: `req.untranslatable` (what decoding saw), then `found` (what
    `apply_messages` saw), then the request-level features."""
    result = PolicyResult()
    if dst == "anthropic":
        for t in req.system:
            t.cache = None
        for tool in req.tools:
            tool.cache = None
        if options.anthropic_cache == "auto":
            result.cache_ttl = "1h" if options.cache_ttl_1h else "5m"
    found = [*req.untranslatable, *found]
    if dst == "responses" and req.stop:
        found.append("stop_sequences")  # the Responses API has no stop sequences
    if dst == "anthropic" and req.json_object and req.json_schema is None:
        found.append("response_format:json_object")
    if (dst == "openai" and req.tools and options.target_reasoning
            and options.chat_tools_effort == "responses"):
        found.append(CHAT_TOOLS)
    result.untranslatable = list(dict.fromkeys(found))
    cap = options.max_tokens_cap
    if cap is not None and req.max_tokens is not None and req.max_tokens > cap:
        req.max_tokens = cap
    return result


def apply_policy(
    req: Request, dst: Api, family: str, model: str, options: TranslationOptions
) -> PolicyResult:
    """Apply the target's rules to `req` in place; what was done, for the report."""
    dropped, found = apply_messages(req.messages, dst, family, model, options)
    result = apply_head(req, dst, options, found)
    result.dropped_reasoning = dropped
    return result
