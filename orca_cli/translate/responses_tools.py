"""Responses API tools: the request's `tools` / `tool_choice` and the tool-call items.

Decoding (towards another format):
- `function` tools stay function tools; a `custom` tool goes as a function tool taking
  `{"input": "…"}` and remembers its origin, so its calls come back as `custom_tool_call`s.
- A `namespace` tool (Codex's `multi_agent_v1`, MCP servers) becomes its member tools
  (function or custom), in the order declared, each under the flat name
  `<namespace>__<member>` — the name Codex itself uses where a namespace cannot travel
  (`ToolName::canonical_flat_name`: the namespace's trailing `_` and the member's leading `_`
  trimmed). A flat name longer than the
  64 characters OpenAI and Anthropic allow a tool name is cut to 55 characters plus `_` and 8
  hex digits of its SHA-256, so it stays valid, distinct and the same on every request. The
  namespace's own description has no place in the other formats and is left out. A history
  call carrying a `namespace` refers to the flat name, and an answer's call of a flat name
  goes back to the client as a `function_call` (`custom_tool_call`) with `name` = member and
  `namespace` = namespace (`ToolOrigin`, the same mapping that brings custom tools back).
- The tools of `additional_tools` input items, which Codex 0.171 sends in place of `tools`
  for a model of its catalog (its code mode: namespaces `functions`, holding the `exec`
  custom tool that runs JavaScript, `clock` and `collaboration`), are decoded as if they
  were top-level ones (`decode_tools`); the item itself carries nothing else and is not a
  message.
- OpenAI's built-in tools (`web_search*`, `file_search`, `code_interpreter`,
  `image_generation`, `computer_use*`, `mcp`) have no analogue in another format: they are
  left out and each one is reported (`dropped_tools` in the trace's `translation` block);
  the model then works without them, as Codex's own export to Anthropic does. A
  `tool_choice` that demands one of them (or `required` when only they were offered) stays
  untranslatable, as does any other tool type (`local_shell`, …).
- A `web_search_call` item of the history (a search the provider ran in an earlier turn)
  becomes a short note in the assistant's text, `[web search: <query>]`: what it found is
  already in the answer that followed, and refusing the whole session on another channel for
  it (untranslatable) would strand every Codex session that ever searched.
"""

from __future__ import annotations

import hashlib
from typing import Any

from orca_cli.translate.model import Request, Tool, ToolCall, ToolOrigin
from orca_cli.wire.responses_input import declared_tools

__all__ = [
    "HOSTED_TOOLS",
    "call_item",
    "decode_tools",
    "encode_tool_fields",
    "flat_name",
    "web_search_note",
]

MAX_TOOL_NAME = 64  # OpenAI function names and Anthropic tool names: ^[a-zA-Z0-9_-]{1,64}$
HOSTED_TOOLS = frozenset({
    "web_search", "web_search_preview", "file_search", "code_interpreter",
    "image_generation", "computer_use_preview", "computer_use", "mcp",
})


def _hosted(kind: str) -> bool:
    # dated variants (`web_search_preview_2025_03_11`, `web_search_2025_08_26`) included
    return kind in HOSTED_TOOLS or kind.startswith("web_search_")


def flat_name(namespace: str, name: str) -> str:
    """The one-level name of `name` inside `namespace`, valid as any format's tool name."""
    flat = f"{namespace.rstrip('_')}__{name.lstrip('_')}"
    if len(flat) <= MAX_TOOL_NAME:
        return flat
    digest = hashlib.sha256(flat.encode()).hexdigest()[:8]
    return f"{flat[: MAX_TOOL_NAME - 9]}_{digest}"


def _function(tool: dict[str, Any], name: str, origin: ToolOrigin | None = None) -> Tool:
    return Tool(name, tool.get("description"), tool.get("parameters"),
                strict=tool.get("strict"), origin=origin)


def _custom(tool: dict[str, Any], name: str, origin: ToolOrigin) -> Tool:
    return Tool(name, tool.get("description"), kind="custom", format=tool.get("format"),
                origin=origin)


def _namespace(tool: dict[str, Any], req: Request) -> None:
    ns = str(tool.get("name") or "")
    for member in tool.get("tools") or ():
        kind = member.get("type") if isinstance(member, dict) else None
        name = str(member.get("name") or "") if kind else ""
        if kind == "function":
            origin = ToolOrigin(name, namespace=ns)
            req.tools.append(_function(member, flat_name(ns, name), origin))
        elif kind == "custom":
            origin = ToolOrigin(name, "custom", ns)
            req.tools.append(_custom(member, flat_name(ns, name), origin))
        else:
            req.untranslatable.append(f"tool:namespace:{kind}")


def _tool_choice(body: dict[str, Any], req: Request) -> None:
    choice = body.get("tool_choice")
    if isinstance(choice, str):
        req.tool_choice = choice
    elif isinstance(choice, dict) and choice.get("type") in ("function", "custom"):
        name = str(choice.get("name") or "")
        ns = choice.get("namespace")
        req.tool_choice = "tool"
        req.tool_choice_name = flat_name(str(ns), name) if ns else name
    elif isinstance(choice, dict):  # a hosted tool, `allowed_tools`, …: the client demands it
        req.untranslatable.append(f"tool_choice:{choice.get('type')}")


def decode_tools(body: dict[str, Any], req: Request) -> None:
    """`tools`, `tool_choice` and `parallel_tool_calls` of a Responses body into `req`. The
    tools of `additional_tools` input items (Codex's code mode) join the top-level ones, in
    order: another format declares tools for the whole request only, so a tool is offered
    from the first turn on, and a later declaration of a name replaces the earlier one."""
    owners: list[int] = []  # which declaring list each of `req.tools` came from
    for i, tools in enumerate(declared_tools(body)):
        start = len(req.tools)
        for tool in tools:
            _declared(tool if isinstance(tool, dict) else {}, req)
        owners.extend([i] * (len(req.tools) - start))
    req.tools[:] = _latest(req, owners)
    _tool_choice(body, req)
    if req.tool_choice == "required" and req.dropped_tools and not req.tools:
        req.untranslatable.append("tool_choice:required")  # only hosted tools could answer it
    req.parallel_tool_calls = body.get("parallel_tool_calls")


def _declared(tool: dict[str, Any], req: Request) -> None:
    kind = str(tool.get("type"))
    if kind == "function":
        req.tools.append(_function(tool, tool.get("name", "")))
    elif kind == "custom":
        name = tool.get("name", "")
        req.tools.append(_custom(tool, name, ToolOrigin(name, "custom")))
    elif kind == "namespace":
        _namespace(tool, req)
    elif _hosted(kind):
        req.dropped_tools.append(kind)
    else:
        req.untranslatable.append(f"tool:{kind}")


def _latest(req: Request, owners: list[int]) -> list[Tool]:
    """`req.tools` with one tool per name: a name declared again by a later list keeps its
    place and takes the later definition; a name twice in one list (a flat name equal to
    another tool's) is ambiguous, and untranslatable."""
    out: list[Tool] = []
    where: dict[str, tuple[int, int]] = {}  # name -> (index in out, owner)
    for tool, owner in zip(req.tools, owners):
        found = where.get(tool.name)
        if found is None:
            where[tool.name] = (len(out), owner)
            out.append(tool)
        elif found[1] == owner:
            req.untranslatable.append("tool:duplicate_name")
            return out
        else:
            out[found[0]] = tool
            where[tool.name] = (found[0], owner)
    return out


def web_search_note(item: dict[str, Any]) -> str:
    """A history `web_search_call` as one line of the assistant's text."""
    found = item.get("action")
    action: dict[str, Any] = found if isinstance(found, dict) else {}
    kind, url = action.get("type"), action.get("url")
    if kind == "search":
        queries = action.get("queries") or ([action["query"]] if action.get("query") else [])
        return f"[web search: {'; '.join(str(q) for q in queries)}]"
    if kind == "open_page" and url:
        return f"[web search: opened {url}]"
    if kind in ("find", "find_in_page") and url:
        return f"[web search: looked for {action.get('pattern')!r} in {url}]"
    return "[web search]"


# --- encoding ----------------------------------------------------------------------------


def call_item(part: ToolCall) -> dict[str, Any]:
    """A tool call as a Responses output / input item."""
    if part.kind == "custom":
        item = {"type": "custom_tool_call", "call_id": part.id, "name": part.name,
                "input": part.arguments}
    else:
        item = {"type": "function_call", "call_id": part.id, "name": part.name,
                "arguments": part.arguments}
    if part.namespace is not None:
        item["namespace"] = part.namespace
    return item


def _tool(tool: Tool) -> dict[str, Any]:
    if tool.kind == "custom":
        out: dict[str, Any] = {"type": "custom", "name": tool.name}
        if tool.description:
            out["description"] = tool.description
        if tool.format:
            out["format"] = tool.format
        return out
    out = {"type": "function", "name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["parameters"] = tool.parameters or {"type": "object", "properties": {}}
    out["strict"] = bool(tool.strict)
    return out


def encode_tool_fields(req: Request, body: dict[str, Any]) -> None:
    """`tools`, `tool_choice` and `parallel_tool_calls` of `req` into a Responses body."""
    if not req.tools:
        return
    body["tools"] = [_tool(t) for t in req.tools]
    if req.tool_choice == "tool":
        kind = next((t.kind for t in req.tools if t.name == req.tool_choice_name), "function")
        body["tool_choice"] = {"type": kind, "name": req.tool_choice_name}
    elif req.tool_choice is not None:
        body["tool_choice"] = req.tool_choice
    if req.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = req.parallel_tool_calls
