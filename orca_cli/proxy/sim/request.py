"""What the sim reads from a request: path, key, prompt-cache prefixes, the tool rule."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from orca_cli.proxy.transport import Headers
from orca_cli.wire.responses_input import input_items

__all__ = [
    "TOOL_MARKER",
    "ToolCall",
    "key_fp",
    "last_user_text",
    "path_of",
    "prefix_tokens",
    "response_headers",
    "tool_call",
]

TOOL_MARKER = "[tool]"
# (call id, tool name, arguments JSON — or a custom tool's freeform input, kind "custom")
ToolCall = tuple[str, str, str]
_FREEFORM_INPUT = "*** Begin Patch\n*** End Patch\n"


def path_of(url: str) -> str:
    start = url.find("://")
    slash = url.find("/", start + 3 if start >= 0 else 0)
    path = url[slash:] if slash >= 0 else "/"
    q = path.find("?")
    path = path if q < 0 else path[:q]
    if not path.startswith("/v1/"):
        at = path.find("/v1/")  # a base URL with a path prefix (…/api/v1/messages)
        path = path[at:] if at >= 0 else path
    return path.rstrip("/")


def key_fp(headers: Headers) -> str:
    for name, value in headers:
        low = name.lower()
        if low == "x-api-key":
            return hashlib.sha256(value.encode()).hexdigest()[:8]
        if low == "authorization" and value[:7].lower() == "bearer ":
            return hashlib.sha256(value[7:].encode()).hexdigest()[:8]
    return ""


def _turns(body: dict[str, Any], api: str) -> list[Any]:
    """The conversation: `messages`, or a Responses body's `input` items."""
    if api == "responses":
        return input_items(body)
    messages = body.get("messages")
    return messages if isinstance(messages, list) else []


def _unmarked(value: Any) -> Any:
    """`value` without Anthropic `cache_control` markers: a marker says where a cached prefix
    ends, it is not part of the prefix, so a turn that moves it forward still reads the
    prefix the previous turn wrote (as Anthropic's cache does)."""
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def prefix_tokens(body: dict[str, Any], api: str,
                  marked: bool = False) -> tuple[list[bytes], list[int]]:
    """Digests of system+tools+messages[0..k] for every k, and the token size of each part
    (sizes[0] = system + tools, sizes[k + 1] = messages[k]), `cache_control` markers left out.
    For the Responses API the system is `instructions` and the messages are the `input`
    items. `marked`: the body carries markers (else the walk to remove them is skipped)."""
    system = (
        body.get("system")
        if api == "anthropic"
        else body.get("instructions")
        if api == "responses"
        else None
    )
    tools, turns = body.get("tools"), _turns(body, api)
    if marked and api == "anthropic":
        system, tools, turns = _unmarked(system), _unmarked(tools), _unmarked(turns)
    base = orjson.dumps([system, tools])
    h = hashlib.blake2b(base, digest_size=16)
    sizes = [len(base) // 4]
    digests: list[bytes] = []
    for msg in turns:
        raw = orjson.dumps(msg)
        h.update(raw)
        digests.append(h.copy().digest())
        sizes.append(max(1, len(raw) // 4))
    return digests, sizes


def last_user_text(body: dict[str, Any], api: str = "openai") -> str:
    """The text of the last message when it is a user text message, else ""."""
    turns = _turns(body, api)
    if not turns or not isinstance(turns[-1], dict):
        return ""
    last = turns[-1]
    if last.get("role") != "user" or last.get("type", "message") != "message":
        return ""
    content = last.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts: list[str] = []
    for block in content:
        if not isinstance(block, dict) or block.get("type") not in ("text", "input_text"):
            return ""  # a tool result (or an image) is not a user text message
        texts.append(str(block.get("text", "")))
    return "\n".join(texts)


def _first_tool(tools: list[Any], api: str) -> tuple[str, dict[str, Any]] | None:
    """(kind, spec) of the tool the rule calls: the first one, or for the Responses API the
    first function or custom tool (built-ins such as `web_search` are the provider's)."""
    if api != "responses":
        first = tools[0]
        spec = first.get("function", first) if api == "openai" else first
        return ("function", spec) if isinstance(spec, dict) else None
    for tool in tools:
        if isinstance(tool, dict) and tool.get("type") in ("function", "custom"):
            return str(tool["type"]), tool
    return None


def tool_call(body: dict[str, Any], api: str, digest: bytes) -> tuple[ToolCall, str] | None:
    """((call id, tool name, arguments), kind) when the tool rule fires, else None; kind is
    "custom" for a Responses custom tool, whose input is freeform text."""
    tools = body.get("tools")
    if not isinstance(tools, list) or not tools or not isinstance(tools[0], dict):
        return None
    if TOOL_MARKER not in last_user_text(body, api):
        return None
    found = _first_tool(tools, api)
    if found is None:
        return None
    kind, spec = found
    name = str(spec.get("name", "tool"))
    call_id = ("toolu_sim_" if api == "anthropic" else "call_sim_") + digest.hex()[:16]
    if kind == "custom":
        return (call_id, name, _FREEFORM_INPUT), kind
    schema = spec.get("input_schema" if api == "anthropic" else "parameters") or {}
    args: dict[str, Any] = {}
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    required = schema.get("required", []) if isinstance(schema, dict) else []
    for prop in required if isinstance(required, list) else ():
        ptype = props.get(prop, {}).get("type") if isinstance(props.get(prop), dict) else None
        args[str(prop)] = _FILL.get(ptype, f"sim-{digest.hex()[:8]}")
    return (call_id, name, orjson.dumps(args).decode()), kind


_FILL: dict[Any, Any] = {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}
# Any other type (string included) gets a "sim-<hex>" string.


def response_headers(api: str, stream: bool, digest: bytes) -> Headers:
    ctype = "text/event-stream; charset=utf-8" if stream else "application/json"
    rid = ("request-id" if api == "anthropic" else "x-request-id", "req_sim_" + digest.hex()[:20])
    return (("content-type", ctype), rid, ("x-orca-sim", "1"))
