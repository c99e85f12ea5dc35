"""OpenAI Responses API codec: requests and JSON responses (streams: `responses_stream`).

Decoding: `instructions` is the system; `input` items become messages — `function_call`,
`custom_tool_call` and `reasoning` items join the assistant turn they belong to,
`function_call_output` / `custom_tool_call_output` become tool results of a user turn, and
`developer` / `system` messages keep their role. A reasoning item's `encrypted_content` is
the provenance carrier: a raw one was made by family `family` (OpenAI), an orca tag restores
the part it was made from. `previous_response_id` cannot be translated (the stored response
lives at one provider) and is reported as untranslatable. Tools, `tool_choice`, namespaced
calls and hosted tools: `responses_tools`.

Encoding: `store: false` with the full input every time (stateless, and nothing stored at the
provider that a later request could not reach through another channel); reasoning parts kept
by `policy` go back as `reasoning` items with their `encrypted_content`; tool results become
`function_call_output` (or `custom_tool_call_output` for a custom call) items.
"""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.translate.common import (
    budget_effort,
    data_url,
    note_dropped,
    openai_effort,
    parse_data_url,
    tag_reasoning,
    type_for,
    untag,
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
    Role,
    StopReason,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from orca_cli.translate.responses_tools import (
    call_item,
    decode_tools,
    encode_tool_fields,
    flat_name,
    web_search_note,
)
from orca_cli.wire.responses_input import effort_updates, plain_payload

__all__ = [
    "decode_input",
    "decode_request",
    "decode_response",
    "encode_error",
    "encode_request",
    "encode_response",
    "output_items",
    "reasoning_item",
    "request_echo",
    "usage_from",
    "usage_to",
]

_TEXT_TYPES = ("input_text", "output_text", "text")


# --- decoding ----------------------------------------------------------------------------


def _content_part(item: dict[str, Any], req: Request) -> Text | Image | Document | None:
    kind = item.get("type")
    if kind in _TEXT_TYPES:
        return Text(item.get("text") or "")
    if kind == "refusal":
        return Text(item.get("refusal") or "")
    if kind == "input_image":
        url = str(item.get("image_url") or "")
        parsed = parse_data_url(url)
        detail = item.get("detail")
        if parsed:
            return Image(parsed[0], parsed[1], detail=detail)
        if item.get("file_id"):
            req.untranslatable.append("file_id")
            return None
        return Image(url=url, detail=detail)
    if kind == "input_file":
        parsed = parse_data_url(str(item.get("file_data") or ""))
        if parsed:
            return Document(parsed[0], parsed[1], title=item.get("filename"))
        if item.get("file_url"):
            return Document(url=item["file_url"], title=item.get("filename"))
        req.untranslatable.append("file_id")
        return None
    if kind == "encrypted_content":  # an agent_message's payload (a sub-agent's task)
        if not item.get("encrypted_content"):
            return None
        text = plain_payload(item)  # written by a model of another maker: plain text
        if text is not None:
            return Text(text)
    req.untranslatable.append(f"content:{kind}")
    return None


def _contents(content: Any, req: Request) -> list[Text | Image | Document]:
    if content is None:
        return []
    if isinstance(content, str):
        return [Text(content)]
    return [p for c in content if isinstance(c, dict) and (p := _content_part(c, req))]


def _reasoning_item(item: dict[str, Any], family: str) -> Reasoning:
    encrypted = item.get("encrypted_content")
    tagged = untag(encrypted)
    if tagged is not None:
        return tagged
    texts = [s.get("text") or "" for s in item.get("content") or () if isinstance(s, dict)]
    if not texts:
        texts = [s.get("text") or "" for s in item.get("summary") or () if isinstance(s, dict)]
    return Reasoning(family, text="\n\n".join(texts), encrypted=encrypted, item_id=item.get("id"))


def _item_part(item: dict[str, Any], req: Request, family: str) -> tuple[Role, Part] | None:
    kind = item.get("type")
    if kind == "function_call":
        name, ns = str(item.get("name")), item.get("namespace")
        return "assistant", ToolCall(
            str(item.get("call_id")),
            flat_name(str(ns), name) if ns else name,
            item.get("arguments") or "",
            item_id=item.get("id"),
        )
    if kind == "custom_tool_call":
        name, ns = str(item.get("name")), item.get("namespace")
        return "assistant", ToolCall(
            str(item.get("call_id")),
            flat_name(str(ns), name) if ns else name,
            item.get("input") or "",
            "custom",
            item.get("id"),
        )
    if kind in ("function_call_output", "custom_tool_call_output"):
        content = _contents(item.get("output"), req)
        custom = kind == "custom_tool_call_output"
        result = ToolResult(
            str(item.get("call_id")), content, kind="custom" if custom else "function"
        )
        return "user", result
    if kind == "reasoning":
        return "assistant", _reasoning_item(item, family)
    if kind == "web_search_call":
        return "assistant", Text(web_search_note(item))
    if kind in ("additional_tools", "configuration_update"):  # read by `decode_request`
        return None
    req.untranslatable.append(f"item:{kind}")
    return None


def decode_input(items: Any, req: Request, family: str = "openai") -> None:
    """`input` (a string or a list of items) into `req`'s messages: an item joins the
    message before it when both are of one role (user or assistant)."""
    if isinstance(items, str):
        req.messages.append(Message("user", [Text(items)]))
        return
    for item in items or ():
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind in ("message", "agent_message"):
            # an agent_message is another agent's message to this one (Codex's sub-agents:
            # the task, then the answer), its text opening with who sent it: user input
            role: Role = ("user" if kind == "agent_message"
                          else ROLES.get(item.get("role") or "user", "user"))
            parts: list[Part] = list(_contents(item.get("content"), req))
            if role in ("user", "assistant") and req.messages and req.messages[-1].role == role:
                req.messages[-1].parts.extend(parts)
            else:
                req.messages.append(Message(role, parts))
            continue
        found = _item_part(item, req, family)
        if found is None:
            continue
        role, part = found
        last = req.messages[-1] if req.messages else None
        if last is not None and last.role == role:
            last.parts.append(part)
        else:
            req.messages.append(Message(role, [part]))


def decode_request(body: dict[str, Any], *, family: str = "openai") -> Request:
    """`family` is who made the raw `encrypted_content` reasoning items of the input."""
    req = Request()
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        req.system = [Text(instructions)]
    decode_input(body.get("input"), req, family)
    decode_tools(body, req)
    req.temperature = body.get("temperature")
    req.top_p = body.get("top_p")
    req.max_tokens = body.get("max_output_tokens")
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict):
        req.reasoning_effort = reasoning.get("effort")
    updated = effort_updates(body)  # GPT-6's mid-conversation effort: the last one holds
    if updated and isinstance(updated[-1], str):
        req.reasoning_effort = updated[-1]
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        req.json_schema = {k: fmt[k] for k in ("name", "schema", "strict") if k in fmt}
    elif isinstance(fmt, dict) and fmt.get("type") == "json_object":
        req.json_object = True
    req.stream = bool(body.get("stream"))
    req.user = body.get("user") or body.get("safety_identifier")
    req.metadata = body.get("metadata")
    req.cache_key = body.get("prompt_cache_key")
    for key in ("previous_response_id", "conversation", "prompt", "background"):
        if body.get(key):
            req.untranslatable.append(key)
    note_dropped(
        body, ("service_tier", "truncation", "max_tool_calls", "top_logprobs"), req.dropped
    )
    return req


# --- encoding ----------------------------------------------------------------------------


def _content_out(part: Text | Image | Document, role: str) -> dict[str, Any] | None:
    if isinstance(part, Text):
        if not part.text:
            return None
        return {"type": "output_text" if role == "assistant" else "input_text", "text": part.text}
    if isinstance(part, Image):
        url = data_url(part.media_type, part.data) if part.data is not None else part.url
        return {"type": "input_image", "image_url": url, "detail": part.detail or "auto"}
    if part.text is not None:
        return {"type": "input_text", "text": part.text}
    out: dict[str, Any] = {"type": "input_file", "filename": part.title or "document.pdf"}
    if part.data is not None:
        out["file_data"] = data_url(part.media_type, part.data)
    else:
        out["file_url"] = part.url
    return out


def reasoning_item(part: Reasoning) -> dict[str, Any]:
    """A reasoning part as the input item its maker gave (no tag: for the model that made
    it)."""
    return _reasoning_out(part, tag=False)


def _reasoning_out(part: Reasoning, tag: bool) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "reasoning"}
    if part.item_id and not tag:
        item["id"] = part.item_id
    item["summary"] = [{"type": "summary_text", "text": part.text}] if part.text else []
    encrypted = tag_reasoning(part) if tag else part.encrypted
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def _result_out(part: ToolResult) -> dict[str, Any]:
    kind = "custom_tool_call_output" if part.kind == "custom" else "function_call_output"
    output: str | list[dict[str, Any]]
    if all(isinstance(c, Text) for c in part.content):
        output = "\n\n".join(c.text for c in part.content if isinstance(c, Text))
    else:
        output = [o for c in part.content if (o := _content_out(c, "user")) is not None]
    return {"type": kind, "call_id": part.call_id, "output": output}


def output_items(parts: list[Part], role: str, *, tag: bool = False) -> list[dict[str, Any]]:
    """The input (or output) items of one message's parts, in order; consecutive content
    parts share one `message` item."""
    items: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        if not pending:
            return
        content: str | list[dict[str, Any]] = list(pending)
        if role == "assistant" and not tag:  # history: an input message takes plain text
            content = "\n\n".join(str(p.get("text") or "") for p in pending)
        items.append({"type": "message", "role": role, "content": content})
        pending.clear()

    for part in parts:
        if isinstance(part, Text | Image | Document):
            out = _content_out(part, role)
            if out is not None:
                pending.append(out)
            continue
        flush()
        if isinstance(part, Reasoning):
            items.append(_reasoning_out(part, tag))
        elif isinstance(part, ToolCall):
            items.append(call_item(part))
        else:
            items.append(_result_out(part))
    flush()
    return items


def _request_fields(req: Request, body: dict[str, Any], reasoning: bool) -> None:
    encode_tool_fields(req, body)
    if not reasoning:
        for key, value in (("temperature", req.temperature), ("top_p", req.top_p)):
            if value is not None:
                body[key] = value
    if req.max_tokens is not None:
        body["max_output_tokens"] = req.max_tokens
    if reasoning:
        asked = req.reasoning_effort or budget_effort(req.thinking_budget) or "medium"
        body["reasoning"] = {"effort": openai_effort(asked, body["model"], "responses"),
                             "summary": "auto"}
        body["include"] = ["reasoning.encrypted_content"]
    if req.json_schema is not None:
        fmt = {
            "type": "json_schema",
            "name": req.json_schema.get("name") or "output",
            "schema": req.json_schema.get("schema") or {},
        }
        if "strict" in req.json_schema:
            fmt["strict"] = req.json_schema["strict"]
        body["text"] = {"format": fmt}
    elif req.json_object:
        body["text"] = {"format": {"type": "json_object"}}


def encode_request(
    req: Request,
    *,
    model: str,
    reasoning: bool = False,
    pieces: list[list[dict[str, Any]]] | None = None,
) -> bytes:
    """The Responses body for `req` (deterministic). `reasoning`: the target is a reasoning
    model (sends `reasoning` + encrypted-content include, leaves out temperature/top_p).
    `pieces`: the messages' `output_items` when already made (else made here)."""
    body: dict[str, Any] = {"model": model}
    instructions = "\n\n".join(p.text for p in req.system if p.text)
    if instructions:
        body["instructions"] = instructions
    if pieces is None:
        pieces = [output_items(msg.parts, msg.role) for msg in req.messages]
    items: list[dict[str, Any]] = []
    for piece in pieces:
        items.extend(piece)
    body["input"] = items
    _request_fields(req, body, reasoning)
    body["store"] = False
    if req.user:
        body["user"] = req.user
    if req.metadata:
        body["metadata"] = req.metadata
    if req.cache_key:
        body["prompt_cache_key"] = req.cache_key
    if req.stream:
        body["stream"] = True
    return orjson.dumps(body)


# --- responses ---------------------------------------------------------------------------


def usage_from(u: dict[str, Any] | None) -> Usage:
    if not u:
        return Usage()
    details = u.get("input_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    write = details.get("cache_write_tokens") or 0
    reasoning = (u.get("output_tokens_details") or {}).get("reasoning_tokens") or 0
    return Usage(u.get("input_tokens") or 0, u.get("output_tokens") or 0, cached, write, reasoning)


def usage_to(u: Usage) -> dict[str, Any]:
    return {
        "input_tokens": u.input,
        "input_tokens_details": {"cached_tokens": u.cached, "cache_write_tokens": u.cache_write},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": u.reasoning},
        "total_tokens": u.input + u.output,
    }


def stop_from(status: str | None, reason: str | None, parts: list[Part]) -> StopReason:
    if status == "incomplete":
        return "content_filter" if reason == "content_filter" else "max_tokens"
    if any(isinstance(p, ToolCall) for p in parts):
        return "tool_use"
    return "end"


def decode_response(body: dict[str, Any], *, family: str = "openai") -> Response:
    req = Request()
    parts: list[Part] = []
    refused = False
    for item in body.get("output") or ():
        if item.get("type") == "message":
            refused = refused or any(c.get("type") == "refusal" for c in item.get("content") or ())
            parts.extend(_contents(item.get("content"), req))
            continue
        found = _item_part(item, req, family)
        if found is not None:
            parts.append(found[1])
    for part in parts:
        if isinstance(part, Reasoning) and part.model is None:
            part.model = body.get("model")
    reason = (body.get("incomplete_details") or {}).get("reason")
    stop = "refusal" if refused else stop_from(body.get("status"), reason, parts)
    return Response(
        str(body.get("id") or ""),
        str(body.get("model") or ""),
        parts,
        stop,
        usage_from(body.get("usage")),
        created=body.get("created_at"),
    )


def item_ids(items: list[dict[str, Any]], rid: str) -> list[dict[str, Any]]:
    """Give output items deterministic ids derived from the response id."""
    core = rid.removeprefix("resp_")
    prefix = {"message": "msg", "function_call": "fc", "custom_tool_call": "ctc", "reasoning": "rs"}
    for n, item in enumerate(items):
        items[n] = {"id": f"{prefix.get(item['type'], 'item')}_{core}_{n}", **item}
        if item["type"] != "reasoning":
            items[n]["status"] = "completed"
        for c in item.get("content") or ():
            c.setdefault("annotations", [])
    return items


# The request parameters a Responses API `response` object repeats (the API's own echo).
# Left out: `store` (orca keeps no response a later request could fetch) and `service_tier`
# and `background`, which report what the provider did, not what was asked.
ECHOED = ("instructions", "max_output_tokens", "max_tool_calls", "metadata",
          "parallel_tool_calls", "previous_response_id", "prompt_cache_key", "reasoning",
          "safety_identifier", "temperature", "text", "tool_choice", "tools", "top_logprobs",
          "top_p", "truncation", "user")


def request_echo(body: dict[str, Any]) -> dict[str, Any]:
    """The parameters of a Responses request `body` that its answer echoes, as sent. An
    answer translated from another format repeats them as the Responses API does; without
    them it would report the defaults (no tools, `tool_choice` "auto")."""
    return {k: body[k] for k in ECHOED if k in body}


def encode_response(resp: Response, *, model_name: str, id: str,
                    echo: dict[str, Any] | None = None) -> bytes:
    items = item_ids(output_items(resp.parts, "assistant", tag=True), id)
    incomplete = resp.stop in ("max_tokens", "content_filter")
    body = {
        "id": id,
        "object": "response",
        "created_at": resp.created or 0,
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": (
            {"reason": "content_filter" if resp.stop == "content_filter" else "max_output_tokens"}
            if incomplete
            else None
        ),
        "model": model_name,
        "output": items,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage_to(resp.usage),
    }
    if echo:
        body.update(echo)
    return orjson.dumps(body)


def encode_error(status: int, message: str, etype: str | None = None,
                 code: str | None = None) -> bytes:
    etype = etype or type_for("responses", status)
    return orjson.dumps({"error": {"message": message, "type": etype, "param": None, "code": code}})
