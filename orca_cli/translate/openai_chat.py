"""OpenAI Chat Completions codec: requests and JSON responses (streams: `openai_chat_stream`).

Decoding: `tool` messages become tool-result parts of a user message (adjacent ones merged),
so every codec sees the Anthropic-like shape "assistant calls, user answers". DeepSeek's
`reasoning_content` on an assistant message is a reasoning part of family `family` (the
caller says whose it is; a client's history does not), `developer` and `system` messages stay
in place with their role.

Encoding (towards DeepSeek, OpenAI, and any Chat-Completions-compatible provider):
- the request's system parts become one leading `system` message; a `developer` message
  becomes a `system` message at its place (Chat-Completions providers other than OpenAI do
  not accept the `developer` role; OpenAI treats both alike);
- tool results become one `tool` message each, right after the assistant turn; images in a
  tool result (which a `tool` message cannot carry) follow in a user message that names the
  call;
- custom (freeform) tools become function tools with one string parameter `input`;
- a reasoning part that `policy` kept (same family and model) goes back as
  `reasoning_content` (DeepSeek's tool loop needs it);
- `max_completion_tokens` towards OpenAI, `max_tokens` elsewhere; `stream_options.
  include_usage` is always asked for, so usage arrives at the end of a stream.
"""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.translate.common import (
    budget_effort,
    custom_args,
    custom_schema,
    data_url,
    note_dropped,
    openai_effort,
    parse_data_url,
    type_for,
)
from orca_cli.translate.model import (
    ROLES,
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
from orca_cli.translate.policy import ChatToolsEffort

__all__ = [
    "STOP_FROM",
    "STOP_TO",
    "decode_messages",
    "decode_request",
    "decode_response",
    "encode_error",
    "encode_request",
    "encode_response",
    "message_dicts",
    "usage_from",
    "usage_to",
]

STOP_FROM: dict[str, StopReason] = {
    "stop": "end",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "content_filter",
}
STOP_TO: dict[str, str] = {
    "end": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "stop_sequence": "stop",
    "refusal": "stop",
    "content_filter": "content_filter",
    "pause": "stop",
}
_DROPPED = (
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
    "top_logprobs",  # without `logprobs: true` it asks for nothing
    "service_tier",
    "verbosity",
)


# --- decoding ----------------------------------------------------------------------------


def _user_part(item: dict[str, Any], req: Request) -> Text | Image | Document | None:
    kind = item.get("type")
    if kind == "text":
        return Text(item.get("text") or "")
    if kind == "image_url":
        spec = item.get("image_url") or {}
        url = spec.get("url") if isinstance(spec, dict) else spec
        detail = spec.get("detail") if isinstance(spec, dict) else None
        parsed = parse_data_url(str(url or ""))
        if parsed:
            return Image(parsed[0], parsed[1], detail=detail)
        return Image(url=url, detail=detail)
    if kind == "file":
        spec = item.get("file") or {}
        parsed = parse_data_url(str(spec.get("file_data") or ""))
        if parsed:
            return Document(parsed[0], parsed[1], title=spec.get("filename"))
        if spec.get("file_id"):
            req.untranslatable.append("file_id")
            return Document(file_id=spec["file_id"])
    req.untranslatable.append(f"content:{kind}")
    return None


def _parts(content: Any, req: Request) -> list[Part]:
    if content is None:
        return []
    if isinstance(content, str):
        return [Text(content)]
    parts: list[Part] = []
    for item in content:
        if isinstance(item, dict) and item.get("type") == "refusal":
            parts.append(Text(item.get("refusal") or ""))
        elif isinstance(item, dict):
            part = _user_part(item, req)
            if part is not None:
                parts.append(part)
    return parts


def _assistant(msg: dict[str, Any], req: Request, family: str) -> Message:
    parts: list[Part] = []
    thinking = msg.get("reasoning_content")
    if isinstance(thinking, str) and thinking:
        parts.append(Reasoning(family, text=thinking))
    parts.extend(_parts(msg.get("content"), req))
    for call in msg.get("tool_calls") or ():
        if call.get("type") == "custom":
            spec = call.get("custom") or {}
            parts.append(
                ToolCall(call["id"], spec.get("name", ""), spec.get("input", ""), "custom")
            )
            continue
        fn = call.get("function") or {}
        parts.append(ToolCall(call["id"], fn.get("name", ""), fn.get("arguments") or ""))
    return Message("assistant", parts)


def _tool_result(msg: dict[str, Any], req: Request) -> ToolResult:
    content = [p for p in _parts(msg.get("content"), req) if not isinstance(p, ToolCall)]
    return ToolResult(str(msg.get("tool_call_id")), content)  # type: ignore[arg-type]


def _tools(body: dict[str, Any], req: Request) -> None:
    for tool in body.get("tools") or ():
        kind = tool.get("type")
        if kind == "function":
            fn = tool.get("function") or {}
            req.tools.append(
                Tool(
                    fn.get("name", ""),
                    fn.get("description"),
                    fn.get("parameters"),
                    strict=fn.get("strict"),
                )
            )
        elif kind == "custom":
            spec = tool.get("custom") or {}
            req.tools.append(
                Tool(
                    spec.get("name", ""),
                    spec.get("description"),
                    kind="custom",
                    format=spec.get("format"),
                )
            )
        else:
            req.untranslatable.append(f"tool:{kind}")
    choice = body.get("tool_choice")
    if isinstance(choice, str):
        req.tool_choice = choice
    elif isinstance(choice, dict):
        req.tool_choice = "tool"
        spec = choice.get("function") or choice.get("custom") or {}
        req.tool_choice_name = spec.get("name")
    req.parallel_tool_calls = body.get("parallel_tool_calls")


def _sampling(body: dict[str, Any], req: Request) -> None:
    req.temperature = body.get("temperature")
    req.top_p = body.get("top_p")
    req.max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
    stop = body.get("stop")
    req.stop = [stop] if isinstance(stop, str) else stop
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        req.json_schema = dict(fmt.get("json_schema") or {})
    elif isinstance(fmt, dict) and fmt.get("type") == "json_object":
        req.json_object = True
    req.reasoning_effort = body.get("reasoning_effort")
    req.stream = bool(body.get("stream"))
    req.user = body.get("user") or body.get("safety_identifier")
    req.metadata = body.get("metadata")
    req.cache_key = body.get("prompt_cache_key")
    if (body.get("n") or 1) > 1:
        req.untranslatable.append("n")
    if body.get("logprobs"):  # the other formats return no token log probabilities
        req.untranslatable.append("logprobs")
    for key in ("audio", "web_search_options", "prediction"):
        if body.get(key) is not None:
            req.untranslatable.append(key)
    note_dropped(body, _DROPPED, req.dropped)


def decode_request(body: dict[str, Any], *, family: str = "unknown") -> Request:
    """`family` is whose `reasoning_content` the history carries (unknown: never replayed)."""
    req = Request()
    decode_messages(body.get("messages") or (), req, family)
    _tools(body, req)
    _sampling(body, req)
    return req


def decode_messages(messages: Any, req: Request, family: str = "unknown") -> None:
    """Each of `messages` into `req`: a `tool` message joins the tool results before it."""
    for msg in messages:
        role = msg.get("role")
        if role == "assistant":
            req.messages.append(_assistant(msg, req, family))
        elif role == "tool":
            result = _tool_result(msg, req)
            last = req.messages[-1] if req.messages else None
            if (
                last is not None
                and last.role == "user"
                and all(isinstance(p, ToolResult) for p in last.parts)
            ):
                last.parts.append(result)
            else:
                req.messages.append(Message("user", [result]))
        elif role in ROLES:
            req.messages.append(
                Message(ROLES[role], _parts(msg.get("content"), req), msg.get("name"))
            )
        else:
            req.untranslatable.append(f"role:{role}")


# --- encoding ----------------------------------------------------------------------------


def _text(parts: list[Any]) -> str:
    return "\n\n".join(p.text for p in parts if isinstance(p, Text) and p.text)


def _media(part: Image | Document) -> dict[str, Any]:
    if isinstance(part, Image):
        url = data_url(part.media_type, part.data) if part.data is not None else part.url
        spec: dict[str, Any] = {"url": url}
        if part.detail:
            spec["detail"] = part.detail
        return {"type": "image_url", "image_url": spec}
    if part.text is not None:
        return {"type": "text", "text": part.text}
    file: dict[str, Any] = {"filename": part.title or "document.pdf"}
    file["file_data"] = data_url(part.media_type, part.data or "")
    return {"type": "file", "file": file}


def _user_content(parts: list[Part]) -> str | list[dict[str, Any]]:
    if all(isinstance(p, Text) for p in parts):
        return _text(parts)
    out: list[dict[str, Any]] = []
    for p in parts:
        if isinstance(p, Text):
            if p.text:
                out.append({"type": "text", "text": p.text})
        elif isinstance(p, Image | Document):
            out.append(_media(p))
    return out


def _call(part: ToolCall) -> dict[str, Any]:
    args = custom_args(part.arguments) if part.kind == "custom" else part.arguments
    return {
        "id": part.id,
        "type": "function",
        "function": {"name": part.name, "arguments": args or "{}"},
    }


def _assistant_msg(msg: Message) -> dict[str, Any]:
    text = _text(msg.parts)
    has_calls = any(isinstance(p, ToolCall) for p in msg.parts)
    out: dict[str, Any] = {"role": "assistant", "content": text or (None if has_calls else "")}
    thinking = "".join(p.text for p in msg.parts if isinstance(p, Reasoning))
    if thinking:
        out["reasoning_content"] = thinking
    calls = [_call(p) for p in msg.parts if isinstance(p, ToolCall)]
    if calls:
        out["tool_calls"] = calls
    return out


def _user_msgs(msg: Message, out: list[dict[str, Any]]) -> None:
    rest: list[Part] = []
    media: list[Part] = []
    for p in msg.parts:
        if not isinstance(p, ToolResult):
            rest.append(p)
            continue
        body = _text(p.content) or ("error" if p.is_error else "")
        out.append({"role": "tool", "tool_call_id": p.call_id, "content": body})
        images = [c for c in p.content if isinstance(c, Image | Document)]
        if images:
            media.append(Text(f"Attachments of tool call {p.call_id}:"))
            media.extend(images)
    rest = media + rest
    if rest:
        out.append({"role": "user", "content": _user_content(rest)})


def message_dicts(msg: Message) -> list[dict[str, Any]]:
    """The Chat Completions messages of one message, whatever the conversation around it."""
    if msg.role in ("system", "developer"):
        return [{"role": "system", "content": _text(msg.parts)}]
    if msg.role == "assistant":
        return [_assistant_msg(msg)]
    out: list[dict[str, Any]] = []
    _user_msgs(msg, out)
    return out


def _messages(req: Request, pieces: list[list[dict[str, Any]]] | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    system = _text(req.system)
    if system:
        out.append({"role": "system", "content": system})
    if pieces is None:
        pieces = [message_dicts(msg) for msg in req.messages]
    for piece in pieces:
        out.extend(piece)
    return out


def _tool(tool: Tool) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": tool.name}
    if tool.description:
        fn["description"] = tool.description
    fn["parameters"] = (
        custom_schema()
        if tool.kind == "custom"
        else (tool.parameters or {"type": "object", "properties": {}})
    )
    if tool.strict is not None:
        fn["strict"] = tool.strict
    return {"type": "function", "function": fn}


def _tool_fields(req: Request, body: dict[str, Any]) -> None:
    if not req.tools:
        return
    body["tools"] = [_tool(t) for t in req.tools]
    if req.tool_choice == "tool":
        body["tool_choice"] = {"type": "function", "function": {"name": req.tool_choice_name}}
    elif req.tool_choice is not None:
        body["tool_choice"] = req.tool_choice
    if req.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = req.parallel_tool_calls


def encode_request(
    req: Request,
    *,
    model: str,
    family: str = "openai",
    reasoning: bool = True,
    pieces: list[list[dict[str, Any]]] | None = None,
    tools_effort: ChatToolsEffort = "any",
) -> bytes:
    """The Chat Completions body for `req` (deterministic). `family` picks the token-limit key
    and whether OpenAI-only fields go out; `reasoning` (the target reasons) whether an effort it
    takes (`common.openai_effort`) may go out, and leaves out `temperature` and `top_p`;
    `pieces`: the messages' `message_dicts` when made; `tools_effort` (`policy.chat_tools_effort`):
    beside function tools the effort is left out (`omit`) or sent as `"none"` (`none`)."""
    body: dict[str, Any] = {"model": model, "messages": _messages(req, pieces)}
    _tool_fields(req, body)
    for key, value in (("temperature", req.temperature), ("top_p", req.top_p)):
        if value is not None and not reasoning:  # reasoning models refuse sampling params
            body[key] = value
    if req.max_tokens is not None:
        body["max_completion_tokens" if family == "openai" else "max_tokens"] = req.max_tokens
    if req.stop:
        body["stop"] = req.stop
    if req.json_schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": req.json_schema}
    elif req.json_object:
        body["response_format"] = {"type": "json_object"}
    asked = req.reasoning_effort or budget_effort(req.thinking_budget)
    effort = openai_effort(asked, model, "openai")
    if reasoning and tools_effort != "any" and body.get("tools"):
        effort = "none" if tools_effort == "none" else None
    if reasoning and effort:
        body["reasoning_effort"] = effort
    if req.user:
        body["user"] = req.user
    if family == "openai":
        if req.metadata:
            body["metadata"] = req.metadata
        if req.cache_key:
            body["prompt_cache_key"] = req.cache_key
    if req.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return orjson.dumps(body)


# --- responses ---------------------------------------------------------------------------


def usage_from(u: dict[str, Any] | None) -> Usage:
    if not u:
        return Usage()
    details = u.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") or u.get("prompt_cache_hit_tokens") or 0
    out_details = u.get("completion_tokens_details") or {}
    return Usage(
        u.get("prompt_tokens") or 0,
        u.get("completion_tokens") or 0,
        cached,
        0,
        out_details.get("reasoning_tokens") or 0,
    )


def usage_to(u: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.input + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cached},
        "completion_tokens_details": {"reasoning_tokens": u.reasoning},
    }


def decode_response(body: dict[str, Any], *, family: str = "openai") -> Response:
    choices = body.get("choices") or [{}]
    choice = choices[0]
    msg = choice.get("message") or {}
    req = Request()
    parts = _assistant(msg, req, family).parts
    for part in parts:
        if isinstance(part, Reasoning):
            part.model = body.get("model")
    stop = STOP_FROM.get(choice.get("finish_reason") or "stop", "end")
    if msg.get("refusal"):
        parts.append(Text(str(msg["refusal"])))
        stop = "refusal"
    return Response(
        str(body.get("id") or ""),
        str(body.get("model") or ""),
        parts,
        stop,
        usage_from(body.get("usage")),
        created=body.get("created"),
    )


def encode_response(resp: Response, *, model_name: str, id: str) -> bytes:
    msg = _assistant_msg(Message("assistant", resp.parts))
    if resp.stop == "refusal":
        msg["refusal"] = msg.get("content")
        msg["content"] = None
    body = {
        "id": id,
        "object": "chat.completion",
        "created": resp.created or 0,
        "model": model_name,
        "choices": [
            {"index": 0, "message": msg, "logprobs": None, "finish_reason": STOP_TO[resp.stop]}
        ],
        "usage": usage_to(resp.usage),
    }
    return orjson.dumps(body)


def encode_error(status: int, message: str, etype: str | None = None,
                 code: str | None = None) -> bytes:
    etype = etype or type_for("openai", status)
    return orjson.dumps({"error": {"message": message, "type": etype, "param": None, "code": code}})
