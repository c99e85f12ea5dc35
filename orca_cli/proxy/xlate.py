"""Serving a request through a channel of another wire format (SPEC §13.2): the I/O side.

The codecs are pure (`orca_cli.translate`); this module decides what they are called with for
one attempt — the target format (the channel's first listed one), the model family, the
options from `[translation]` and the channel — and builds the upstream request, the answer
translator and the client's error in its own shape. `forward` calls it when the channel
does not speak the inbound format; of a same-format request it only sees one whose body
carries orca's reasoning tag (`same_format`: the tags are resolved, SPEC §13.2 rule 4) or
asks for extended thinking its tool loop cannot take.

Choices where the SPEC is silent:
* The model family (reasoning provenance) is the channel type for first-party types
  (`anthropic`, `openai`, `deepseek`, `gemini`); for an aggregator or compatible endpoint it is
  read from the model id (`claude…`/`anthropic/…` → anthropic, `deepseek…` → deepseek,
  `gpt…`/`o1…`/`openai/…` → openai), else the channel type.
* The answer's `model` is the client's requested name when `[server] response_model =
  "requested"` applies (a router or alias target), else the upstream model served.
* The answer's `created` / `created_at` is the upstream's own where its format has one (Chat
  Completions, Responses), else the time the answer arrived (its first byte; the whole body
  of a JSON answer) on the clock `Translations` was given (the Messages API has none).
* An untranslatable feature skips the attempt before any upstream call, takes no health probe
  and costs no retry budget: it says nothing about the upstream.
* The target model's facts come from its `[models]` table: `reasoning` (unset: judged by the
  upstream id — o-series, GPT-5 but its `-chat` ids, `deepseek-reasoner`, Gemini 2.5+) and
  `max_output_tokens` (a larger `max_tokens` is lowered to it; towards Messages, which needs a
  `max_tokens`, it also bounds the 8,192 used when the client set none).
* A body the inbound codec cannot read (wrong types where its format has lists or objects,
  below the top-level fields `wire/body_check` refuses first) is untranslatable as
  `malformed_body`, and it ends the request there: the client's 400 says the body is not a
  valid request of its format. No other attempt is made, so a malformed turn never reaches a
  model other than the session's pin (a lenient upstream would serve it and move the pin).
* The options of a (channel, model, inbound format) are worked out on its first request and
  kept for the runtime's life (its config never changes); translated conversation units are
  kept in a bounded cache (`unit_cache`) and reused by the next turn of the session.
* Of the client's headers only `accept` travels (its `anthropic-beta`, `openai-beta` and
  version headers belong to the other format); a `pass_through_auth` channel gets the
  client's credential in the target format's own header.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from orca_cli.clock import Clock, SystemClock
from orca_cli.config.schema import ChannelConfig, Config
from orca_cli.immutable import immutable
from orca_cli.proxy.transport import (
    API_PATHS,
    Headers,
    anthropic_version_header,
    auth_headers,
    filter_response_headers,
    upstream_url,
)
from orca_cli.proxy.unit_cache import UnitCache, UnitScope
from orca_cli.translate import (
    ResponseTranslator,
    Translated,
    TranslationError,
    TranslationOptions,
    translate_error,
    translate_request,
)
from orca_cli.translate.claude import claude_traits
from orca_cli.translate.native import (
    Resolved,
    carries_tag,
    fit_messages,
    fit_openai,
    resolve_wrappers,
)
from orca_cli.translate.policy import CHAT_TOOLS, chat_tools_effort, is_reasoning_model
from orca_cli.translate.responses import request_echo
from orca_cli.types import Api

if TYPE_CHECKING:
    from orca_cli.proxy.forward import Inbound

__all__ = ["COMPACTION_TRIGGER", "MALFORMED", "Crossing", "Target", "Translations",
           "chat_tools_refused", "compaction_refused", "cross", "model_family", "native_report",
           "responses_first", "same_format", "translated_error", "untranslatable_message"]

_FIRST_PARTY = {"anthropic": "anthropic", "openai": "openai", "deepseek": "deepseek",
                "gemini": "gemini"}
_BY_PREFIX = (("anthropic/", "anthropic"), ("claude", "anthropic"), ("deepseek", "deepseek"),
              ("openai/", "openai"), ("gpt", "openai"), ("o1", "openai"), ("o3", "openai"),
              ("o4", "openai"), ("gemini", "gemini"), ("google/", "gemini"))
_CLIENT_HEADERS = ("accept",)
MALFORMED = "malformed_body"  # the untranslatable "feature" of a body its own codec cannot read


def model_family(ch: ChannelConfig, model: str) -> str:
    """Who makes the reasoning of `model` served by `ch` (see the module docstring)."""
    return model_family_of(ch.type, model)


def model_family_of(channel_type: str, model: str) -> str:
    """`model_family` by the channel's type."""
    if channel_type in _FIRST_PARTY:
        return _FIRST_PARTY[channel_type]
    low = model.lower()
    for prefix, family in _BY_PREFIX:
        if low.startswith(prefix) or f"/{prefix}" in low:
            return family
    return channel_type


@dataclass(slots=True)
class Crossing:
    """One attempt's translation: the upstream body and what the answer needs."""

    src: Api  # the inbound format
    dst: Api  # the channel's format
    upstream_model: str
    family: str
    translated: Translated
    clock: Clock  # the answer's time, when the upstream's format has none

    @property
    def untranslatable(self) -> str | None:
        missing = self.translated.report["untranslatable"]
        return str(missing[0]) if missing else None

    def report(self) -> dict[str, Any]:
        """The trace's `translation` block (SPEC §13.2 rule 9)."""
        r = self.translated.report
        out = {"from": r["from"], "to": r["to"],
               "cache_breakpoints_added": r["cache_breakpoints_added"],
               "dropped_reasoning": r["dropped_reasoning"], "rewritten_ids": r["rewritten_ids"],
               "dropped_tools": r["dropped_tools"]}
        if r.get("dropped_params"):
            out["params_dropped"] = list(r["dropped_params"])
        return out

    def url(self, ch: ChannelConfig) -> str:
        return upstream_url(ch, self.dst, API_PATHS[self.dst])

    def headers(self, ch: ChannelConfig, inb: Inbound, key: str | None) -> Headers:
        """The target format's headers: its credential, `anthropic-version` towards
        Anthropic; of the client's headers only `accept` (theirs are of another format)."""
        out: list[tuple[str, str]] = [("content-type", "application/json")]
        wanted = dict(inb.headers)
        out.extend((n, wanted[n]) for n in _CLIENT_HEADERS if n in wanted)
        if key is not None:
            out.extend(auth_headers(self.dst, key))
        if self.dst == "anthropic":
            out.extend(anthropic_version_header(()))
        return tuple(out)

    def answer(self, inb: Inbound) -> ResponseTranslator:
        """The translator of the answer that has just arrived (it is stamped now)."""
        name = inb.rename if inb.rename is not None else self.upstream_model
        return ResponseTranslator(
            self.dst, self.src, name, upstream_model=self.upstream_model,
            upstream_family=self.family, tools=self.translated.tools,
            created=int(self.clock.now()), include_usage=not inb.add_include_usage,
            echo=request_echo(inb.body) if self.src == "responses" else None)


@immutable
class Target:
    """What translating for one (channel, model, inbound format) needs, worked out once."""

    dst: Api
    upstream_model: str
    family: str
    options: TranslationOptions
    memo: UnitScope


class Translations:
    """The request path's translation state, one per runtime: each (channel, model, inbound
    format)'s `Target` (the target model's facts and the `[translation]` options, the same for
    every request of the config), the cache of translated conversation units, and the clock
    translated answers are stamped with (the runtime's; the system clock when not given)."""

    def __init__(self, cfg: Config, units: UnitCache | None = None, *,
                 clock: Clock | None = None) -> None:
        self.cfg = cfg
        self.units = units if units is not None else UnitCache()
        self.clock: Clock = clock if clock is not None else SystemClock()
        self._targets: dict[tuple[str, str, str, Api], Target] = {}

    def target(self, ch: ChannelConfig, model: str, src: Api, dst: Api | None = None) -> Target:
        """The target of `src` requests for `model` on `ch`, in `dst` (default: the
        channel's first format)."""
        key = (ch.name, model, src, dst or ch.api)
        found = self._targets.get(key)
        if found is None:
            found = self._targets[key] = self._target(ch, model, src, dst or ch.api)
        return found

    def _target(self, ch: ChannelConfig, model: str, src: Api, dst: Api) -> Target:
        upstream = ch.upstream_model(model)
        family = model_family(ch, upstream)
        tc = self.cfg.translation
        facts = self.cfg.models.get(model)
        cap = facts.max_output_tokens if facts is not None else None
        opts = TranslationOptions(anthropic_cache=tc.anthropic_cache,
                                  foreign_reasoning=tc.foreign_reasoning,
                                  cache_ttl_1h=ch.cache_ttl_s >= 3600,
                                  target_reasoning=is_reasoning_model(
                                      upstream, facts.reasoning if facts is not None else None),
                                  max_tokens_cap=cap,
                                  anthropic_max_tokens=min(cap, 8192) if cap else 8192,
                                  chat_tools_effort=chat_tools_effort(upstream, ch.type))
        scope = self.units.scope((src, dst, family, upstream, opts))
        return Target(dst, upstream, family, opts, scope)


def cross(translations: Translations, inb: Inbound, ch: ChannelConfig,
          model: str, dst: Api | None = None) -> Crossing:
    """The translation of `inb` for `model` on `ch` into `dst` (default: the channel's first
    format; a channel of another format, or one `responses_first` sends to Responses)."""
    t = translations.target(ch, model, inb.api, dst)
    try:
        tr = translate_request(inb.body, inb.api, t.dst, model=t.upstream_model,
                               target_model_family=t.family, options=t.options, memo=t.memo)
    except (TranslationError, ValueError, KeyError, TypeError, AttributeError):
        tr = _refused(inb.api, t.dst, MALFORMED)
    return Crossing(inb.api, t.dst, t.upstream_model, t.family, tr, translations.clock)


def chat_tools_refused(translations: Translations, inb: Inbound, ch: ChannelConfig,
                       model: str) -> Crossing | None:
    """A same-format Chat Completions request with function tools for an OpenAI reasoning
    model that takes them only on the Responses API (`policy.chat_tools_effort` "responses":
    GPT-6 Astra, GPT-6.1 Sol and later), on a channel that does not speak it: no body serves
    it, so the attempt is skipped as untranslatable (`policy.CHAT_TOOLS`) and the next
    candidate tried; else None."""
    if inb.api != "openai" or not inb.body.get("tools"):
        return None
    t = translations.target(ch, model, inb.api, "openai")
    if t.options.chat_tools_effort != "responses" or not t.options.target_reasoning:
        return None
    return Crossing(inb.api, "openai", t.upstream_model, t.family,
                    _refused(inb.api, "openai", CHAT_TOOLS), translations.clock)


# Codex's built-in `openai` provider asks for OpenAI's server-side compaction: a request whose
# input ends with this item, answered by an encrypted `compaction` item only OpenAI's own
# Responses API writes (captured with Codex 0.171, tests/agents/CAPTURES.md).
COMPACTION_TRIGGER = "item:compaction_trigger"


def compaction_refused(translations: Translations, inb: Inbound, ch: ChannelConfig,
                       model: str) -> Crossing | None:
    """A same-format Responses request that asks for OpenAI's server-side compaction, on a
    channel that is not OpenAI's own (`type = "openai"`): another server would answer it with
    a plain message, on which Codex fails the turn ("expected exactly one compaction output
    item"), so the attempt is skipped as untranslatable; else None. Another format's
    translation refuses the item itself."""
    if inb.api != "responses" or ch.type == "openai":
        return None
    items = inb.body.get("input")
    last = items[-1] if isinstance(items, list) and items else None
    if not isinstance(last, dict) or last.get("type") != "compaction_trigger":
        return None
    t = translations.target(ch, model, inb.api, "responses")
    return Crossing(inb.api, "responses", t.upstream_model, t.family,
                    _refused(inb.api, "responses", COMPACTION_TRIGGER), translations.clock)


def _refused(src: Api, dst: Api, feature: str) -> Translated:
    return Translated(b"", {"from": src, "to": dst, "cache_breakpoints_added": 0,
                            "dropped_reasoning": 0, "rewritten_ids": 0, "dropped_tools": [],
                            "untranslatable": [feature]})


def responses_first(cfg: Config, inb: Inbound, ch: ChannelConfig, model: str) -> bool:
    """Whether a request that would reach `ch` as Chat Completions goes to its Responses API
    instead: it carries tools, the channel speaks both, and the OpenAI model reasons but
    refuses function tools beside a reasoning effort on Chat Completions
    (`policy.chat_tools_effort`) — OpenAI's own advice, which keeps the effort."""
    if "responses" not in ch.apis or inb.api == "responses" or not inb.body.get("tools"):
        return False
    if inb.api != "openai" and ch.api != "openai":
        return False  # translated into the channel's first format, which is not Chat
    upstream = ch.upstream_model(model)
    facts = cfg.models.get(model)
    return chat_tools_effort(upstream, ch.type) != "any" and bool(
        _openai_reasons(ch.type, upstream, facts.reasoning if facts else None))


def same_format(cfg: Config, inb: Inbound, ch: ChannelConfig, model: str) -> Resolved | None:
    """The body of a same-format attempt when it must differ from what the client sent, else
    None (the raw bytes go). Orca's reasoning wrappers (a turn served translated before) are
    resolved for `model` on `ch` as the translating path would (`translate.native`; found by
    `carries_tag`, a walk of the conversation's blocks, no re-encode); then the body is fitted
    to the model that serves it — a Messages body to its Claude generation (thinking form,
    thinking a tool loop cannot take, sampling parameters: `native.fit_messages`), an OpenAI
    body to whether the model reasons (`native.fit_openai`)."""
    upstream = ch.upstream_model(model)
    resolved = None
    if inb.api != "openai" and carries_tag(inb.body, inb.api):
        resolved = resolve_wrappers(inb.body, inb.api, family=model_family(ch, upstream),
                                    model=upstream, foreign=cfg.translation.foreign_reasoning)
    body = resolved.body if resolved is not None else inb.body
    if inb.api == "anthropic":
        fitted = fit_messages(body, claude_traits(upstream))
    else:
        facts = cfg.models.get(model)
        reasons = _openai_reasons(ch.type, upstream,
                                  facts.reasoning if facts is not None else None)
        fitted = None if reasons is None else fit_openai(
            body, inb.api, reasons, chat_tools_effort(upstream, ch.type), upstream)
    if fitted is None or resolved is None:
        return fitted or resolved
    return replace(fitted, dropped=resolved.dropped, restored=resolved.restored)


@functools.lru_cache(maxsize=512)
def _openai_reasons(channel_type: str, upstream: str, declared: bool | None) -> bool | None:
    """Whether an OpenAI model reasons (`policy.is_reasoning_model`); None for a model of
    another maker, whose API's rules `fit_openai` does not describe."""
    if model_family_of(channel_type, upstream) != "openai":
        return None
    return is_reasoning_model(upstream, declared)


def native_report(api: Api, resolved: Resolved) -> dict[str, Any]:
    """The trace's `translation` block of a same-format attempt whose body was changed: its
    wrappers resolved (the drops counted as the translating path counts them), its extended
    thinking taken off (`thinking_off: true`), its thinking form rewritten (`thinking_form`:
    the form written), sampling or reasoning parameters dropped (`sampling_dropped`,
    `params_dropped`) or a key renamed (`params_renamed`) — each key only when it
    happened."""
    out: dict[str, Any] = {"from": api, "to": api, "cache_breakpoints_added": 0,
                           "dropped_reasoning": resolved.dropped, "rewritten_ids": 0,
                           "dropped_tools": []}
    if resolved.thinking_off:
        out["thinking_off"] = True
    if resolved.thinking_form:
        out["thinking_form"] = resolved.thinking_form
    if resolved.sampling_dropped:
        out["sampling_dropped"] = list(resolved.sampling_dropped)
    if resolved.params_dropped:
        out["params_dropped"] = list(resolved.params_dropped)
    if resolved.params_renamed:
        out["params_renamed"] = dict(resolved.params_renamed)
    return out


def untranslatable_message(api: Api, features: list[str], channels: list[str]) -> str:
    """The client's 400 when no candidate could take the request (SPEC §13.2 rule 5)."""
    if MALFORMED in features:
        return (f"the request body is not a valid {api} request (a field has the wrong type, "
                f"or it nests too deeply once its tool arguments are read), so it cannot be "
                f"translated for the channels tried: {', '.join(channels)}")
    hint = (f"; {CHAT_TOOLS}: the model takes function tools only on the Responses API, so "
            'its channel needs api = ["responses", "openai"]' if CHAT_TOOLS in features else "")
    if COMPACTION_TRIGGER in features:
        hint += (f"; {COMPACTION_TRIGGER}: OpenAI's server-side compaction, which only "
                 "OpenAI's own API answers: give Codex a provider block of its own (orca init "
                 "--agent codex) and it compacts on any model")
    return (f"the request uses {', '.join(features)}, which no candidate channel's "
            f"format can express (channels tried: {', '.join(channels)}){hint}")


def translated_error(crossing: Crossing, status: int, headers: Headers,
                     body: bytes) -> tuple[int, Headers, bytes]:
    """An upstream error answer in the inbound shape: status (type-mapped), message,
    `retry-after` and rate-limit headers kept."""
    out_status, out = translate_error(crossing.dst, crossing.src, status, body)
    kept = tuple((k, v) for k, v in filter_response_headers(headers)
                 if k not in ("content-type", "content-length"))
    return out_status, (("content-type", "application/json"), *kept), out
