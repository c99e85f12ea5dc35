"""A request's conversation translated one message at a time (SPEC §13.2).

An agent resends its whole history every turn, and all of it but the newest messages is what
the previous turn already translated. So `api.translate_request` cuts the conversation into
*units* whose translation does not depend on the conversation around them, translates each
(decode, the per-message policy, encode: `translate_units`) and lets the request path keep the
result for reuse (`UnitMemo`, keyed by the unit's JSON bytes). Only joining the units into the
target's turns, the cache breakpoints and the rest of the body are done per request.

A unit is one message of a Chat Completions or Messages body, and a run of Responses `input`
items that decode into one message (consecutive items of one role, user or assistant, as
`responses.decode_input` merges them; an item no message takes joins the run before it).
What differs from decoding the whole body at once — Chat Completions `tool` messages each a
user message of their own instead of one for the run — changes no target's bytes: towards
Messages adjacent user turns are joined, towards Responses each tool result is its own item.
The property tests check both ways give the same bytes.

A `UnitOut` is shared by every request that reuses it: nothing may change it or what it holds
(`anthropic.encode_request` copies a block before it puts a marker on it). Its lists are
lists, not tuples, only because orjson writes a tuple as an array too and building one costs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, cast

import orjson

from orca_cli.translate import anthropic, openai_chat, responses
from orca_cli.translate.model import ROLES, Message, Request
from orca_cli.translate.policy import TranslationOptions, apply_messages
from orca_cli.types import Api

__all__ = ["NATIVE_FAMILY", "Conversation", "UnitMemo", "UnitOut", "conversation", "translate_units", "units"]

# The role a Responses item decodes into (`responses._item_part`); a `message` item's is its own.
_ITEM_ROLES = {
    "function_call": "assistant",
    "custom_tool_call": "assistant",
    "reasoning": "assistant",
    "web_search_call": "assistant",
    "function_call_output": "user",
    "custom_tool_call_output": "user",
    "agent_message": "user",
}
_MERGING = ("user", "assistant")


class UnitOut:
    """One unit translated: `pieces` (one per message it decoded into: `(role, blocks)`
    towards Messages, a list of messages or items otherwise), what decoding found
    untranslatable, what the policy found (`found`), the reasoning parts dropped and the
    tool-call ids rewritten."""

    __slots__ = ("dropped", "found", "pieces", "plain", "rewritten", "untranslatable")

    def __init__(self, pieces: list[Any], untranslatable: list[str], found: list[str],
                 dropped: int, rewritten: list[str]) -> None:
        self.pieces = pieces
        self.untranslatable = untranslatable
        self.found = found
        self.dropped = dropped
        self.rewritten = rewritten
        self.plain = not (untranslatable or found or dropped or rewritten)  # nothing to report


def _item_role(item: dict[str, Any]) -> str | None:
    kind = item.get("type", "message")
    if kind == "message":
        return ROLES.get(item.get("role") or "user", "user")
    return _ITEM_ROLES.get(kind)


def _groups(items: Iterable[Any]) -> list[Any]:
    groups: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] | None = None
    role: str | None = None
    for item in items:
        if not isinstance(item, dict):
            continue
        this = _item_role(item)
        if current is not None and (this is None or (this == role and this in _MERGING)):
            current.append(item)
            continue
        current, role = [item], this
        groups.append(current)
    return groups


def units(body: dict[str, Any], src: Api) -> list[Any]:
    """The units of `body`'s conversation, in order (see the module docstring)."""
    if src == "responses":
        items = body.get("input")
        if isinstance(items, str):
            return [items]
        return _groups(items or ())
    return list(body.get("messages") or ())


def _decode_messages(src: Api) -> Callable[[Any, Request, str], None]:
    if src == "anthropic":
        return lambda unit, req, family: anthropic.decode_messages((unit,), req, family)
    if src == "responses":
        return responses.decode_input
    return lambda unit, req, family: openai_chat.decode_messages((unit,), req, family)


def _encode_anthropic(messages: list[Message], rewritten: list[str]) -> list[Any]:
    return [(m.role, anthropic.message_blocks(m, rewritten)) for m in messages]


def _encode_responses(messages: list[Message], rewritten: list[str]) -> list[Any]:
    return [responses.output_items(m.parts, m.role) for m in messages]


def _encode_chat(messages: list[Message], rewritten: list[str]) -> list[Any]:
    return [openai_chat.message_dicts(m) for m in messages]


_ENCODERS = {"anthropic": _encode_anthropic, "responses": _encode_responses,
             "openai": _encode_chat}


def translate_units(
    batch: list[Any],
    src: Api,
    dst: Api,
    *,
    model: str,
    target_model_family: str,
    options: TranslationOptions,
    inbound_family: str,
) -> list[UnitOut]:
    """Each unit of `batch` (format `src`) as pieces of a `dst` request. A unit's translation
    is a pure function of the unit and the other arguments, whatever else is in `batch`."""
    decode, encode = _decode_messages(src), _ENCODERS[dst]
    req = Request()
    out: list[UnitOut] = []
    for unit in batch:
        req.messages, req.untranslatable = [], []
        decode(unit, req, inbound_family)
        messages = req.messages
        dropped, found = apply_messages(messages, dst, target_model_family, model, options)
        rewritten: list[str] = []
        out.append(UnitOut(encode(messages, rewritten), req.untranslatable, found, dropped,
                           rewritten))
    return out


class UnitMemo(Protocol):
    """Where the caller keeps translated units for reuse, by their JSON bytes (the request
    path's bounded cache, `proxy.unit_cache`). It must be scoped to one (src, dst, model,
    family, options): a unit's translation depends on all of them."""

    def get_many(self, keys: list[bytes]) -> list[UnitOut | None]:
        """What is kept for each key (None: nothing)."""

    def put_many(self, keys: list[bytes], values: list[UnitOut]) -> None:
        """Keep each value under its key."""


class Conversation:
    """A request's conversation translated: the request without its messages (`head`; with
    what decoding found untranslatable in the messages first), the messages' pieces for the
    encoder (None: the encoder makes them from `head.messages`), and the report's figures."""

    __slots__ = ("dropped", "found", "head", "pieces", "rewritten")

    def __init__(self, head: Request, pieces: list[Any] | None, found: list[str],
                 rewritten: list[str], dropped: int) -> None:
        self.head, self.pieces, self.found = head, pieces, found
        self.rewritten, self.dropped = rewritten, dropped


_HEADS = {"anthropic": anthropic.decode_request, "openai": openai_chat.decode_request,
          "responses": responses.decode_request}
_CONVERSATION = {"anthropic": "messages", "openai": "messages", "responses": "input"}
# The model family a request of each format comes from, when nothing more is known.
NATIVE_FAMILY = {"anthropic": "anthropic", "responses": "openai", "openai": "unknown"}


_HEAD_ITEMS = ("additional_tools", "configuration_update")


def _head_body(body: dict[str, Any], src: Api) -> dict[str, Any]:
    """`body` without its conversation, for decoding the rest of the request. A Responses
    body keeps its `additional_tools` input items, which declare tools as `tools` does
    (`responses_tools.decode_tools`), and its `configuration_update` items, which set the
    reasoning effort as `reasoning` does (`responses.decode_request`)."""
    left_out = _CONVERSATION[src]
    head = {k: v for k, v in body.items() if k != left_out}
    items = body.get(left_out) if src == "responses" else None
    if isinstance(items, list):
        declaring = [i for i in items if isinstance(i, dict) and i.get("type") in _HEAD_ITEMS]
        if declaring:
            head[left_out] = declaring
    return head


def conversation(
    body: dict[str, Any],
    src: Api,
    dst: Api,
    *,
    model: str,
    target_model_family: str,
    options: TranslationOptions,
    memo: UnitMemo,
) -> Conversation:
    """`body`'s conversation unit by unit, each unit from `memo` when it is there."""
    family = options.inbound_family or NATIVE_FAMILY[src]
    head = _HEADS[src](_head_body(body, src), family=family)
    batch = units(body, src)
    try:
        keys = [orjson.dumps(unit) for unit in batch]
    except orjson.JSONEncodeError:  # not JSON (a body built in code): nothing to key it by
        keys = None
    outs: list[UnitOut | None] = (memo.get_many(keys) if keys is not None
                                  else [None] * len(batch))
    if None in outs:
        missing = [i for i, kept in enumerate(outs) if kept is None]
        fresh = translate_units([batch[i] for i in missing], src, dst, model=model,
                                target_model_family=target_model_family, options=options,
                                inbound_family=family)
        for i, made in zip(missing, fresh, strict=True):
            outs[i] = made
        if keys is not None:
            memo.put_many([keys[i] for i in missing], fresh)
    done = cast("list[UnitOut]", outs)
    pieces = [piece for out in done for piece in out.pieces]
    conv = Conversation(head, pieces, [], [], 0)
    reported = [out for out in done if not out.plain]
    if reported:
        unknown: list[str] = []
        for out in reported:
            unknown.extend(out.untranslatable)
            conv.found.extend(out.found)
            conv.rewritten.extend(out.rewritten)
            conv.dropped += out.dropped
        head.untranslatable[:0] = unknown  # what decoding saw: the messages' first
    return conv
