"""Anthropic Messages codec: requests and JSON responses (streams: `anthropic_stream`).

Decoding keeps every `cache_control` marker on its part (`cache` = its ttl) so that a
same-family re-encode is faithful; `policy` decides which markers an upstream gets. Encoding:
- leading system/developer messages join the top-level `system` blocks after the decoded
  system; a system/developer message later in the conversation becomes a user text block at
  its place (moving it into `system` would change the cached prefix of every later turn);
- adjacent messages of one role merge, empty text blocks are left out (the API refuses them);
- a custom (freeform) tool becomes a function tool whose `input_schema` is one string
  parameter `input`, and its calls carry `{"input": raw}`;
- tool-call ids that do not fit `^[a-zA-Z0-9_-]+$` are rewritten (`common.safe_id`);
- a reasoning part is a `thinking` block with its signature, `redacted_thinking` with its
  data, or — when it came from another family and `policy` kept it as text — a text block.
"""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.translate.anthropic_marks import marker, place_marks
from orca_cli.translate.claude import forces_tool, relax_tool_choice, takes_sampling, thinking_for
from orca_cli.translate.common import (
    custom_args,
    custom_schema,
    json_args,
    note_dropped,
    restore_id,
    safe_id,
    tag_reasoning,
    type_for,
    untag,
)
from orca_cli.translate.model import (
    Document,
    Image,
    Message,
    Part,
    Reasoning,
    Request,
    Response,
    StopReason,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
)

__all__ = [
    "STOP_FROM",
    "STOP_TO",
    "Pieces",
    "decode_messages",
    "decode_request",
    "decode_response",
    "encode_error",
    "encode_request",
    "encode_response",
    "message_blocks",
    "reasoning_block",
    "thinking_fits",
    "usage_from",
    "usage_to",
]

STOP_FROM: dict[str, StopReason] = {
    "end_turn": "end",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    "pause_turn": "pause",
    "model_context_window_exceeded": "max_tokens",
}
STOP_TO: dict[str, str] = {
    "end": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    "content_filter": "refusal",
    "pause": "pause_turn",
}
_DROPPED = ("top_k", "service_tier", "container", "context_management", "speed")


# --- decoding ----------------------------------------------------------------------------


def _cache(block: dict[str, Any]) -> str | None:
    marker = block.get("cache_control")
    if not isinstance(marker, dict):
        return None
    return str(marker.get("ttl") or "5m")


def _source(block: dict[str, Any]) -> tuple[str | None, str | None, str | None, str | None]:
    src = block.get("source") or {}
    kind = src.get("type")
    if kind == "base64":
        return src.get("media_type"), src.get("data"), None, None
    if kind == "url":
        return None, None, src.get("url"), None
    if kind == "text":
        return src.get("media_type") or "text/plain", None, None, src.get("data")
    return None, None, None, None


def _media(block: dict[str, Any], req: Request) -> Image | Document:
    kind = (block.get("source") or {}).get("type")
    if kind not in ("base64", "url", "text"):  # a file id (another provider's) or content
        req.untranslatable.append("file_id" if kind == "file" else f"{block['type']}:{kind}")
        return Document(cache=_cache(block))
    media_type, data, url, text = _source(block)
    if block["type"] == "image":
        return Image(media_type=media_type, data=data, url=url, cache=_cache(block))
    return Document(media_type, data, url, text, block.get("title"), cache=_cache(block))


def _reasoning(block: dict[str, Any], family: str) -> Reasoning:
    if block["type"] == "redacted_thinking":
        data = block.get("data")
        return untag(data) or Reasoning(family, redacted=data)
    signature = block.get("signature")
    tagged = untag(signature)
    if tagged is not None:
        return tagged
    return Reasoning(family, text=block.get("thinking") or "", signature=signature)


def _part(block: dict[str, Any], req: Request, family: str = "anthropic") -> Part | None:
    kind = block.get("type")
    if kind == "text":
        return Text(block.get("text") or "", _cache(block))
    if kind in ("image", "document"):
        return _media(block, req)
    if kind == "tool_use":
        args = orjson.dumps(block.get("input") or {}).decode()
        call_id = restore_id(str(block.get("id")))
        return ToolCall(call_id, str(block.get("name")), args, cache=_cache(block))
    if kind == "tool_result":
        content = block.get("content")
        parts: list[Text | Image | Document] = []
        if isinstance(content, str):
            parts.append(Text(content))
        elif isinstance(content, list):
            for sub in content:
                p = _part(sub, req) if isinstance(sub, dict) else None
                if isinstance(p, Text | Image | Document):
                    parts.append(p)
        return ToolResult(
            restore_id(str(block.get("tool_use_id"))),
            parts,
            bool(block.get("is_error")),
            cache=_cache(block),
        )
    if kind in ("thinking", "redacted_thinking"):
        return _reasoning(block, family)
    req.untranslatable.append(f"content:{kind}")
    return None


def _content(content: Any, req: Request, family: str = "anthropic") -> list[Part]:
    if isinstance(content, str):
        return [Text(content)]
    parts: list[Part] = []
    for block in content or ():
        part = _part(block, req, family) if isinstance(block, dict) else None
        if part is not None:
            parts.append(part)
    return parts


def _tools(body: dict[str, Any], req: Request) -> None:
    for tool in body.get("tools") or ():
        kind = tool.get("type")
        if kind not in (None, "custom"):
            req.untranslatable.append(f"tool:{kind}")
            continue
        req.tools.append(
            Tool(
                tool["name"],
                tool.get("description"),
                tool.get("input_schema"),
                strict=tool.get("strict"),
                cache=_cache(tool),
            )
        )
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        kind = choice.get("type")
        req.tool_choice = "required" if kind == "any" else kind
        req.tool_choice_name = choice.get("name")
        if choice.get("disable_parallel_tool_use"):
            req.parallel_tool_calls = False


def decode_messages(messages: Any, req: Request, family: str = "anthropic") -> None:
    """Each of `messages` as a `Message` of `req` (what it cannot take: `req.untranslatable`)."""
    for msg in messages:
        role = msg.get("role")
        req.messages.append(
            Message(
                "assistant" if role == "assistant" else "user",
                _content(msg.get("content"), req, family),
            )
        )


def decode_request(body: dict[str, Any], *, family: str = "anthropic") -> Request:
    """`family` is who made the untagged thinking blocks of the history."""
    req = Request()
    system = body.get("system")
    if isinstance(system, str):
        req.system = [Text(system)] if system else []
    elif isinstance(system, list):
        req.system = [Text(b.get("text") or "", _cache(b)) for b in system if isinstance(b, dict)]
    decode_messages(body.get("messages") or (), req, family)
    _tools(body, req)
    req.temperature = body.get("temperature")
    req.top_p = body.get("top_p")
    req.max_tokens = body.get("max_tokens")
    req.stop = body.get("stop_sequences")
    req.stream = bool(body.get("stream"))
    note_dropped(body, _DROPPED, req.dropped)
    meta = body.get("metadata")
    if isinstance(meta, dict) and meta.get("user_id"):
        req.user = str(meta["user_id"])
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        req.thinking_budget = thinking.get("budget_tokens")
    config = body.get("output_config")
    if isinstance(config, dict):
        req.reasoning_effort = config.get("effort")
        fmt = config.get("format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            req.json_schema = {"name": "output", "schema": fmt.get("schema"), "strict": True}
    return req


# --- encoding ----------------------------------------------------------------------------


def _with_cache(block: dict[str, Any], ttl: str | None) -> dict[str, Any]:
    if ttl is not None:
        block["cache_control"] = marker(ttl)
    return block


def _media_block(part: Image | Document) -> dict[str, Any]:
    if isinstance(part, Document) and part.text is not None:
        source: dict[str, Any] = {"type": "text", "media_type": "text/plain", "data": part.text}
    elif part.data is not None:
        source = {"type": "base64", "media_type": part.media_type, "data": part.data}
    else:
        source = {"type": "url", "url": part.url}
    block: dict[str, Any] = {"type": "image" if isinstance(part, Image) else "document"}
    block["source"] = source
    if isinstance(part, Document) and part.title:
        block["title"] = part.title
    return _with_cache(block, part.cache)


def _block(part: Part, rewritten: list[str], tag: bool = False) -> dict[str, Any] | None:
    """One content block. `tag`: reasoning carries its provenance tag (response direction)."""
    if isinstance(part, Text):
        if not part.text:
            return None
        return _with_cache({"type": "text", "text": part.text}, part.cache)
    if isinstance(part, Image | Document):
        return _media_block(part)
    if isinstance(part, ToolCall):
        call_id, changed = safe_id(part.id)
        if changed:
            rewritten.append(part.id)
        args = custom_args(part.arguments) if part.kind == "custom" else part.arguments
        block = {"type": "tool_use", "id": call_id, "name": part.name, "input": json_args(args)}
        return _with_cache(block, part.cache)
    if isinstance(part, ToolResult):
        content = [b for p in part.content if (b := _block(p, rewritten)) is not None]
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": safe_id(part.call_id)[0]}
        result["content"] = content
        if part.is_error:
            result["is_error"] = True
        return _with_cache(result, part.cache)
    if tag:
        return {"type": "thinking", "thinking": part.text, "signature": tag_reasoning(part)}
    return reasoning_block(part)


def reasoning_block(part: Reasoning) -> dict[str, Any]:
    """A reasoning part as its maker gave it: `redacted_thinking`, or `thinking` with its
    signature (no tag: for the model that made it)."""
    if part.redacted is not None:
        return {"type": "redacted_thinking", "data": part.redacted}
    return {"type": "thinking", "thinking": part.text, "signature": part.signature or ""}


def message_blocks(msg: Message, rewritten: list[str]) -> list[dict[str, Any]]:
    """The content blocks of one message, whatever the conversation around it (ids rewritten
    are appended to `rewritten`). `encode_request` joins them into turns."""
    return [b for p in msg.parts if (b := _block(p, rewritten)) is not None]


Pieces = list[tuple[str, list[dict[str, Any]]]]  # (role, message_blocks) of each message


def _results_first(block: dict[str, Any]) -> bool:
    kind: str = block["type"]
    return kind != "tool_result"


def _system_and_messages(
    system: list[dict[str, Any]], pieces: Pieces
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Turns from the messages' blocks: leading system/developer messages join `system`, a
    later one is a user turn, adjacent turns of one role merge, and tool results open their
    user turn (stable sort: order kept). The blocks are shared, never changed: a turn gets a
    list of its own, and a marker goes on a copy (`anthropic_marks`)."""
    messages: list[dict[str, Any]] = []
    several: list[list[dict[str, Any]]] = []  # user turns of more than one block
    last: dict[str, Any] | None = None
    leading = True
    for role, blocks in pieces:
        if role == "system" or role == "developer":
            if leading:
                system.extend(blocks)
                continue
            role = "user"
        leading = False
        if not blocks:
            continue
        if last is not None and last["role"] == role:
            content = last["content"]
            content.extend(blocks)
            if role == "user" and (not several or several[-1] is not content):
                several.append(content)
        else:
            last = {"role": role, "content": list(blocks)}
            messages.append(last)
            if role == "user" and len(blocks) > 1:
                several.append(last["content"])
    for content in several:
        content.sort(key=_results_first)
    return system, messages


def _tool(tool: Tool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    if tool.kind == "custom":
        out["input_schema"] = custom_schema()
    else:
        out["input_schema"] = tool.parameters or {"type": "object", "properties": {}}
    return _with_cache(out, tool.cache)


def _tool_choice(req: Request) -> dict[str, Any] | None:
    if req.tool_choice is None and req.parallel_tool_calls is not False:
        return None
    kind = {"required": "any"}.get(req.tool_choice or "auto", req.tool_choice or "auto")
    choice: dict[str, Any] = {"type": kind}
    if kind == "tool":
        choice["name"] = req.tool_choice_name
    if req.parallel_tool_calls is False and kind != "none":
        choice["disable_parallel_tool_use"] = True
    return choice


def thinking_fits(messages: list[Any]) -> bool:
    """Extended thinking needs the last assistant turn of a tool loop to open with its
    thinking block; when that block was dropped (foreign reasoning) thinking stays off.
    (`messages` may be a client's: a turn's content can be a string.)"""
    for msg in reversed(messages):
        if isinstance(msg, dict) and msg.get("role") == "assistant":
            blocks = msg.get("content")
            if not isinstance(blocks, list) or not blocks:
                return True
            uses_tools = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks)
            first = blocks[0].get("type") if isinstance(blocks[0], dict) else None
            return not uses_tools or first in ("thinking", "redacted_thinking")
    return True


def encode_request(
    req: Request,
    *,
    model: str,
    max_tokens: int = 8192,
    rewritten: list[str] | None = None,
    cache_ttl: str | None = None,
    pieces: Pieces | None = None,
) -> tuple[bytes, int]:
    """The Messages body for `req` (deterministic) and the cache breakpoints placed (with
    `cache_ttl`, see `anthropic_marks`). Ids rewritten are appended to `rewritten`;
    `max_tokens` is the default when the request set none (it is required). `pieces`: the
    messages' `message_blocks` when already made (else made here from `req.messages`)."""
    ids: list[str] = rewritten if rewritten is not None else []
    if pieces is None:
        pieces = [(m.role, message_blocks(m, ids)) for m in req.messages]
    system = [b for p in req.system if (b := _block(p, ids)) is not None]
    system, messages = _system_and_messages(system, pieces)
    tools = [_tool(t) for t in req.tools]
    added = place_marks(system, messages, tools, cache_ttl) if cache_ttl is not None else 0
    body: dict[str, Any] = {"model": model, "max_tokens": req.max_tokens or max_tokens}
    if system:
        body["system"] = system
    body["messages"] = messages
    if tools:  # kept with tool_choice none: a history with tool_use needs them
        body["tools"] = tools
        choice = relax_tool_choice(model, _tool_choice(req))
        if choice is not None:
            body["tool_choice"] = choice
    for key, value in (("temperature", req.temperature), ("top_p", req.top_p)):
        if value is not None:
            body[key] = value
    if req.stop:
        body["stop_sequences"] = req.stop
    if req.user:
        body["metadata"] = {"user_id": req.user}
    output_config: dict[str, Any] = {}
    thinking, effort = thinking_for(model, req.reasoning_effort, req.thinking_budget,
                                    body["max_tokens"])
    forced = forces_tool(body.get("tool_choice"))  # thinking never goes beside a forced call
    if thinking is not None and not forced and thinking_fits(messages):
        body["thinking"] = thinking
        if effort is not None:
            output_config["effort"] = effort
    if "thinking" in body or not takes_sampling(model):
        body.pop("temperature", None)
        body.pop("top_p", None)
    if req.json_schema is not None:
        output_config["format"] = {"type": "json_schema",
                                   "schema": req.json_schema.get("schema") or {}}
    if output_config:
        body["output_config"] = output_config
    if req.stream:
        body["stream"] = True
    return orjson.dumps(body), added


# --- responses ---------------------------------------------------------------------------


def usage_from(u: dict[str, Any] | None) -> Usage:
    if not u:
        return Usage()
    cached = u.get("cache_read_input_tokens") or 0
    write = u.get("cache_creation_input_tokens") or 0
    return Usage(
        (u.get("input_tokens") or 0) + cached + write, u.get("output_tokens") or 0, cached, write
    )


def usage_to(u: Usage) -> dict[str, int]:
    return {
        "input_tokens": max(u.input - u.cached - u.cache_write, 0),
        "cache_creation_input_tokens": u.cache_write,
        "cache_read_input_tokens": u.cached,
        "output_tokens": u.output,
    }


def decode_response(body: dict[str, Any], *, family: str = "anthropic") -> Response:
    req = Request()
    parts = _content(body.get("content") or [], req, family)
    for part in parts:
        if isinstance(part, Reasoning) and part.model is None:
            part.model = body.get("model")
    return Response(
        id=str(body.get("id") or ""),
        model=str(body.get("model") or ""),
        parts=parts,
        stop=STOP_FROM.get(body.get("stop_reason") or "end_turn", "end"),
        usage=usage_from(body.get("usage")),
        stop_sequence=body.get("stop_sequence"),
    )


def encode_response(resp: Response, *, model_name: str, id: str) -> bytes:
    content = [b for p in resp.parts if (b := _block(p, [], tag=True)) is not None]
    body = {
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model_name,
        "content": content,
        "stop_reason": STOP_TO[resp.stop],
        "stop_sequence": resp.stop_sequence,
        "usage": usage_to(resp.usage),
    }
    return orjson.dumps(body)


def encode_error(status: int, message: str, etype: str | None = None) -> bytes:
    etype = etype or type_for("anthropic", status)
    return orjson.dumps({"type": "error", "error": {"type": etype, "message": message}})
