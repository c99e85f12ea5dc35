"""The internal model every codec decodes into and encodes from (SPEC §13.2).

Three kinds of value live here: a `Request` (what an agent asked for, in no wire format), a
`Response` (a whole non-stream answer) and the stream `Event`s an upstream stream decodes
into. They are plain slotted classes: the translation runs on the request path, and a
frozen dataclass costs about three times as much to build.

Conventions shared by every codec:
- A tool call's `arguments` is JSON *text*, kept byte-for-byte as the client sent it (Chat
  Completions and Responses carry text; Anthropic carries an object, serialised with orjson,
  whose output is stable for a given object).
- A `Reasoning` part remembers who made it (`family`, `model`) and what the provider needs to
  accept it back (`signature`, `encrypted`, `redacted`); `policy.reasoning_for_target` decides
  whether it may go to a target.
- `Usage.input` counts every prompt token, cached reads and cache writes included (the
  OpenAI convention); Anthropic's `input_tokens` is `input - cached - cache_write`.
- Stop reasons are one vocabulary: "end", "tool_use", "max_tokens", "stop_sequence",
  "refusal", "content_filter", "pause".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ROLES",
    "BlockEnd",
    "Document",
    "End",
    "ErrorEvent",
    "Event",
    "Image",
    "Message",
    "Part",
    "Reasoning",
    "ReasoningDelta",
    "Request",
    "Response",
    "Role",
    "Start",
    "Stop",
    "StopReason",
    "Text",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolDelta",
    "ToolOrigin",
    "ToolResult",
    "ToolStart",
    "Usage",
    "UsageEvent",
]

Role = Literal["system", "developer", "user", "assistant"]
# A wire `role` string to its Role (the OpenAI formats name the same four).
ROLES: dict[str, Role] = {"system": "system", "developer": "developer", "user": "user",
                          "assistant": "assistant"}
StopReason = Literal[
    "end", "tool_use", "max_tokens", "stop_sequence", "refusal", "content_filter", "pause"
]
ToolKind = Literal["function", "custom"]


@dataclass(slots=True)
class Text:
    text: str
    cache: str | None = None  # an Anthropic cache marker's ttl ("5m" / "1h") when one was set


@dataclass(slots=True)
class Image:
    media_type: str | None = None
    data: str | None = None  # base64
    url: str | None = None
    detail: str | None = None  # OpenAI's "low" / "high" / "auto"
    cache: str | None = None


@dataclass(slots=True)
class Document:
    """A file: a PDF (base64 or URL) or plain text (`text`)."""

    media_type: str | None = None
    data: str | None = None
    url: str | None = None
    text: str | None = None
    title: str | None = None
    file_id: str | None = None
    cache: str | None = None


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text for a function tool, the raw input for a custom tool
    kind: ToolKind = "function"
    item_id: str | None = None  # the Responses item id ("fc_…"), kept for a same-family replay
    cache: str | None = None
    namespace: str | None = None  # a Responses namespaced call (`name` is then the member's)


@dataclass(slots=True)
class ToolResult:
    call_id: str
    content: list[Text | Image | Document]
    is_error: bool = False
    kind: ToolKind = "function"
    cache: str | None = None


@dataclass(slots=True)
class Reasoning:
    """A thinking block / reasoning item / `reasoning_content`, with its provenance."""

    family: str  # "anthropic", "openai", "deepseek", ... (who made it)
    model: str | None = None
    text: str = ""  # thinking text, summary text or reasoning_content
    signature: str | None = None  # Anthropic thinking signature
    encrypted: str | None = None  # Responses encrypted_content
    redacted: str | None = None  # Anthropic redacted_thinking data
    item_id: str | None = None  # Responses reasoning item id ("rs_…")
    cache: str | None = None


Part = Text | Image | Document | ToolCall | ToolResult | Reasoning


@dataclass(slots=True)
class Message:
    role: Role
    parts: list[Part]
    name: str | None = None


@dataclass(slots=True)
class Tool:
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None  # JSON schema (function tools)
    kind: ToolKind = "function"
    format: dict[str, Any] | None = None  # a custom tool's grammar / text format
    strict: bool | None = None
    cache: str | None = None
    origin: ToolOrigin | None = None  # set when `name` is not the client's own (see ToolOrigin)


@dataclass(slots=True, frozen=True)
class ToolOrigin:
    """What a tool call going upstream under another name or kind is, in the client's terms:
    a Responses custom tool (sent as a function tool) or a member of a Responses namespace
    (sent under its flat name `<namespace>__<name>`). The answer's calls are mapped back by it."""

    name: str
    kind: ToolKind = "function"
    namespace: str | None = None


@dataclass(slots=True)
class Request:
    """One request in no wire format. `untranslatable` collects what a decoder saw that the
    model has no place for (built-in tools, audio, ...): each entry excludes every target.
    `dropped` names request parameters that only tune the source provider (`top_k`, `seed`,
    penalties, ...): they are left out and reported, the request is still served."""

    messages: list[Message] = field(default_factory=list)
    system: list[Text] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    tool_choice: str | None = None  # "auto" | "none" | "required" | "tool"
    tool_choice_name: str | None = None
    parallel_tool_calls: bool | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    json_schema: dict[str, Any] | None = None  # {"name", "schema", "strict"}
    json_object: bool = False
    reasoning_effort: str | None = None
    thinking_budget: int | None = None
    stream: bool = False
    user: str | None = None
    metadata: dict[str, Any] | None = None
    cache_key: str | None = None  # prompt_cache_key
    untranslatable: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # parameters no other format has
    dropped_tools: list[str] = field(default_factory=list)  # hosted tools with no analogue


@dataclass(slots=True)
class Usage:
    input: int = 0  # every prompt token, cached reads and cache writes included
    output: int = 0
    cached: int = 0
    cache_write: int = 0
    reasoning: int = 0


@dataclass(slots=True)
class Response:
    id: str
    model: str
    parts: list[Part]
    stop: StopReason = "end"
    usage: Usage = field(default_factory=Usage)
    stop_sequence: str | None = None
    created: int | None = None


# --- stream events -----------------------------------------------------------------------
# `index` is the internal content-block index: 0, 1, 2 ... in order of appearance, whatever
# the upstream's own numbering. A block is opened by its first event and closed by BlockEnd.


@dataclass(slots=True)
class Start:
    id: str
    model: str
    usage: Usage | None = None
    created: int | None = None


@dataclass(slots=True)
class TextDelta:
    index: int
    text: str


@dataclass(slots=True)
class ReasoningDelta:
    """Thinking text; `signature` / `encrypted` / `redacted` arrive on their own delta."""

    index: int
    text: str = ""
    signature: str | None = None
    encrypted: str | None = None
    redacted: str | None = None
    item_id: str | None = None


@dataclass(slots=True)
class ToolStart:
    index: int
    id: str
    name: str
    kind: ToolKind = "function"
    namespace: str | None = None


@dataclass(slots=True)
class ToolDelta:
    index: int
    arguments: str


@dataclass(slots=True)
class BlockEnd:
    index: int


@dataclass(slots=True)
class UsageEvent:
    usage: Usage


@dataclass(slots=True)
class Stop:
    reason: StopReason
    stop_sequence: str | None = None


@dataclass(slots=True)
class End:
    """The upstream stream finished cleanly."""


@dataclass(slots=True)
class ErrorEvent:
    message: str
    status: int = 500
    type: str | None = None


Event = (
    Start
    | TextDelta
    | ReasoningDelta
    | ToolStart
    | ToolDelta
    | BlockEnd
    | UsageEvent
    | Stop
    | End
    | ErrorEvent
)
