"""Helpers every codec shares: SSE framing, error types, id rewriting, reasoning tags.

Error types (fidelity rule 8). Each format names an error by type; the HTTP status is the
common ground. `status_for(api, type, status)` and `type_for(api, status)` map both ways, with
Anthropic's `overloaded_error` (529) ⇄ OpenAI 503 as the one status that changes.

Tool-call ids (rule 3). Anthropic's `tool_use.id` must match `^[a-zA-Z0-9_-]+$`; Chat
Completions and Responses accept any string. An id that does not fit is rewritten to
`orcaid_` + unpadded urlsafe base64 of its UTF-8 bytes: deterministic (the same id always
gives the same rewrite, so the prompt cache keeps hitting) and reversible (`restore_id`).

Reasoning provenance tags (rule 4). When a reasoning part crosses into a format that cannot
hold its provenance natively (DeepSeek reasoning in an Anthropic thinking block, a Claude
thinking signature in a Responses reasoning item, ...), the opaque field the client echoes back
(`signature` / `encrypted_content`) carries `orca1.` + base64 of `[family, model, text,
signature, encrypted, redacted]`. On the way back `untag` restores the part with its true
provenance, so it returns only to the family and model that made it. Raw provider values never
start with `orca1.` (Anthropic signatures and OpenAI encrypted content are plain base64).
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from typing import NamedTuple

import orjson

from orca_cli.translate.model import Reasoning
from orca_cli.types import Api
from orca_cli.wire.errors import error_type as type_for  # one table per format's error types

__all__ = [
    "OVERFLOW_CODE",
    "TAG",
    "TranslationError",
    "is_overflow",
    "openai_code",
    "overflow_message",
    "restore_id",
    "safe_id",
    "sse",
    "status_for",
    "tag_reasoning",
    "type_for",
    "untag",
]

_ID_OK = re.compile(r"^[a-zA-Z0-9_-]+$")
_ID_PREFIX = "orcaid_"
TAG = "orca1."  # the start of every provenance tag (never of a provider's own value)

_ANTHROPIC_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
_OPENAI_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "insufficient_quota": 429,
    "permission_error": 403,
    "not_found_error": 404,
    "rate_limit_error": 429,
    "server_error": 500,
}


# Error codes of the OpenAI shape (Chat Completions, Responses) for Anthropic's error types,
# where an OpenAI client acts on the code (Codex: rate limits, context overflow).
OVERFLOW_CODE = "context_length_exceeded"
_OPENAI_CODES = {"rate_limit_error": "rate_limit_exceeded",
                 "authentication_error": "invalid_api_key"}
_OPENAI_STATUS_CODES = {429: "rate_limit_exceeded"}
_CONTEXT_MAX = re.compile(r"maximum context length is (\d+)")
_CONTEXT_USED = re.compile(r"(?:resulted in|requested) (\d+) tokens")
_OVERFLOW_TEXT = ("maximum context length", "exceeds the context window")


class TranslationError(ValueError):
    """A body that is not valid for its declared format (the caller answers 400)."""


def sse(event: str | None, payload: bytes) -> bytes:
    """One SSE event: `event: NAME` (when named) and one `data:` line."""
    if event is None:
        return b"data: " + payload + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + payload + b"\n\n"


def status_for(src: Api, dst: Api, status: int, etype: str | None) -> int:
    """The status an error of `src` (with `status`, `etype`) answers with in `dst`.

    The status is kept except where a format has its own: Anthropic 529 ⇄ OpenAI 503. A
    missing or unusual status is recovered from the type."""
    if not status or status < 400:
        table = _ANTHROPIC_STATUS if src == "anthropic" else _OPENAI_STATUS
        status = table.get(etype or "", 500)
    if src == "anthropic" and dst != "anthropic" and status == 529:
        return 503
    if src != "anthropic" and dst == "anthropic" and status == 503:
        return 529
    return status


def is_overflow(src: Api, status: int, code: str | None, message: str) -> bool:
    """Whether an error of `src` says the prompt is longer than the model's context window
    (SPEC §14.3): Anthropic's 400 "prompt is too long: N tokens > M maximum", OpenAI's
    `context_length_exceeded` (or its message, from compatible providers with another code)."""
    text = message.lower()
    if src == "anthropic":
        return status in (0, 400) and "prompt is too long" in text
    return code == OVERFLOW_CODE or any(t in text for t in _OVERFLOW_TEXT)


def overflow_message(message: str) -> str:
    """An overflow error's message as Anthropic words it ("prompt is too long: N tokens > M
    maximum", the numbers read from an OpenAI message when it has them)."""
    if "prompt is too long" in message.lower():
        return message
    limit, used = _CONTEXT_MAX.search(message), _CONTEXT_USED.search(message)
    if limit is not None and used is not None:
        return f"prompt is too long: {used.group(1)} tokens > {limit.group(1)} maximum"
    return f"prompt is too long: {message}" if message else "prompt is too long"


def openai_code(etype: str | None, status: int) -> str | None:
    """The OpenAI-shape `code` for an Anthropic error of `etype` and `status` (None: none)."""
    return _OPENAI_CODES.get(etype or "") or _OPENAI_STATUS_CODES.get(status)


def safe_id(call_id: str) -> tuple[str, bool]:
    """`call_id` as an Anthropic-valid id, and whether it had to be rewritten."""
    if _ID_OK.match(call_id):
        return call_id, False
    raw = base64.urlsafe_b64encode(call_id.encode()).rstrip(b"=").decode()
    return _ID_PREFIX + raw, True


def restore_id(call_id: str) -> str:
    """The original of an id `safe_id` rewrote (any other id is returned unchanged)."""
    if not call_id.startswith(_ID_PREFIX):
        return call_id
    raw = call_id[len(_ID_PREFIX) :]
    try:
        return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return call_id


def tag_reasoning(part: Reasoning) -> str:
    """The opaque provenance tag for `part` (see the module docstring)."""
    fields = [part.family, part.model, part.text, part.signature, part.encrypted, part.redacted]
    return TAG + base64.urlsafe_b64encode(orjson.dumps(fields)).decode()


def untag(value: str | None) -> Reasoning | None:
    """The reasoning part a tag carries, or None when `value` is not an orca tag."""
    if not value or not value.startswith(TAG):
        return None
    try:
        fields = orjson.loads(base64.urlsafe_b64decode(value[len(TAG) :]))
        family, model, text, signature, encrypted, redacted = fields
    except (binascii.Error, ValueError, TypeError, orjson.JSONDecodeError):
        return None
    if not isinstance(family, str):
        return None
    return Reasoning(
        family=family,
        model=model,
        text=text or "",
        signature=signature,
        encrypted=encrypted,
        redacted=redacted,
    )


_ID_PREFIXES = ("chatcmpl-", "msg_", "resp_")
_ID_SHAPE = {"openai": "chatcmpl-", "anthropic": "msg_", "responses": "resp_"}


def response_id(dst: Api, upstream_id: str) -> str:
    """An id of `dst`'s shape derived from the upstream's (deterministic, prefix swapped)."""
    core = upstream_id
    for prefix in _ID_PREFIXES:
        if core.startswith(prefix):
            core = core[len(prefix) :]
            break
    if dst == "anthropic":
        core, _ = safe_id(core) if core else ("0", False)
    return _ID_SHAPE[dst] + core


def data_url(media_type: str | None, data: str) -> str:
    return f"data:{media_type or 'application/octet-stream'};base64,{data}"


def parse_data_url(url: str) -> tuple[str, str] | None:
    """(media_type, base64 data) of a `data:…;base64,…` URL, else None."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url.partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head[5:-7] or "application/octet-stream", data


def json_args(arguments: str) -> object:
    """Tool-call arguments text as an object (Anthropic's `input`); text that is not a JSON
    object is wrapped as `{"input": text}` rather than lost."""
    try:
        value = orjson.loads(arguments) if arguments else {}
    except orjson.JSONDecodeError:
        return {"input": arguments}
    return value if isinstance(value, dict) else {"input": value}


CUSTOM_PARAM = "input"  # the one string parameter a custom (freeform) tool becomes


def custom_schema() -> dict[str, object]:
    return {
        "type": "object",
        "properties": {CUSTOM_PARAM: {"type": "string", "description": "The raw tool input."}},
        "required": [CUSTOM_PARAM],
        "additionalProperties": False,
    }


def custom_args(raw: str) -> str:
    """A custom tool's raw input as function-call arguments text."""
    return orjson.dumps({CUSTOM_PARAM: raw}).decode()


def custom_input(arguments: str) -> str:
    """The raw input back out of function-call arguments text made by `custom_args` (or by a
    model that was shown the function form)."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments
    if isinstance(value, dict) and isinstance(value.get(CUSTOM_PARAM), str):
        return str(value[CUSTOM_PARAM])
    return arguments


def note_dropped(body: dict[str, object], names: tuple[str, ...], dropped: list[str]) -> None:
    """Append to `dropped` each of `names` that `body` sets (not null)."""
    dropped.extend(n for n in names if body.get(n) is not None)


class GptVersion(NamedTuple):
    """An OpenAI GPT id's version: `gpt-5.4-mini` is (5, 4, "-mini")."""

    major: int
    minor: int  # 0 when the id names none (`gpt-5`)
    rest: str  # what follows the version


_GPT = re.compile(r"(?:^|/)gpt-(\d+)(?:\.(\d+))?(.*)")


@functools.lru_cache(maxsize=512)
def gpt_version(model: str) -> GptVersion | None:
    """The version of an OpenAI GPT id (`gpt-6.2-sol`, `openai/gpt-5.4`), or None for an id
    that names none: what the per-generation rules of OpenAI's models are judged by."""
    m = _GPT.search(model.lower())
    if m is None:
        return None
    return GptVersion(int(m.group(1)), int(m.group(2) or 0), m.group(3))


def first_gpt6(v: GptVersion) -> bool:
    """GPT-6 Sol or GPT-6 Luna: the GPT-6 models before Astra, which take the `none` effort and
    no mid-conversation effort change."""
    return (v.major, v.minor) == (6, 0) and v.rest.startswith(("-sol", "-luna"))


# OpenAI's reasoning efforts, lowest first.
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
_O_SERIES = re.compile(r"(?:^|/)o[134](?:-|$)")


@functools.lru_cache(maxsize=512)
def openai_efforts(model: str, api: Api = "responses") -> tuple[str, ...] | None:
    """The reasoning efforts the OpenAI model `model` takes on `api` (Chat Completions'
    `reasoning_effort`, the Responses API's `reasoning.effort`), lowest first, or None for an
    id whose set is not known here (another maker's, a later generation), which is sent what
    the client asked. OpenAI answers any other 400 "Unsupported value: 'minimal' is not
    supported with the 'gpt-5.6-luna' model. Supported values are: …". From OpenAI's model
    docs and guides, and what public clients quote of its refusals:

    - o1, o3, o4-mini: low to high. GPT-5 (5.0): minimal to high; its `-codex` low to high,
      its `-pro` high only.
    - GPT-5.1: none to high (its `-codex` low to high, `-codex-max` low to xhigh).
    - GPT-5.2 to 5.5: none to xhigh (their `-codex` from low). No `minimal` from 5.1 on.
    - GPT-5.6: none to xhigh, and `max` on the Responses API only.
    - GPT-6 and later: low to xhigh, and `max` on the Responses API; GPT-6 Sol and Luna
      also `none` ("GPT-6 Astra and GPT-6.1 Sol do not support none; use low instead")."""
    v = gpt_version(model)
    if v is None:
        return ("low", "medium", "high") if _O_SERIES.search(model.lower()) else None
    major, minor, rest = v.major, v.minor, v.rest
    if major == 5 and minor == 0:
        if rest.startswith("-pro"):
            return ("high",)
        return EFFORTS[2:5] if rest.startswith("-codex") else EFFORTS[1:5]
    if major == 5 and minor == 1:
        if rest.startswith("-codex-max"):
            return EFFORTS[2:6]
        return EFFORTS[2:5] if rest.startswith("-codex") else ("none", *EFFORTS[2:5])
    top = 7 if api == "responses" else 6  # `max`: the Responses API's only
    if major == 5 and minor <= 5:
        return EFFORTS[2:6] if rest.startswith("-codex") else ("none", *EFFORTS[2:6])
    if major == 5:
        return ("none", *EFFORTS[2:top])
    if major >= 6:
        return ("none", *EFFORTS[2:top]) if first_gpt6(v) else EFFORTS[2:top]
    return None  # before GPT-5: no reasoning model of that name


def openai_effort(effort: str | None, model: str, api: Api = "responses") -> str | None:
    """A reasoning effort as the OpenAI model `model` takes it on `api`: one its set
    (`openai_efforts`) lacks becomes the nearest it has, the higher of two as near (Codex's
    `max` served on GPT-5.4 goes as `xhigh`, `minimal` on GPT-5.6 as `low`, `none` on GPT-6
    Astra as `low`). Where the set is not known, Anthropic's `max` (Claude Code's `/effort
    max`) goes as `xhigh`, the highest most models take; any other effort as it is."""
    if effort is None:
        return None
    levels = openai_efforts(model, api)
    if levels is None:
        return "xhigh" if effort == "max" else effort
    if effort in levels or effort not in EFFORTS:
        return effort
    at = EFFORTS.index(effort)
    return min(levels, key=lambda level: (abs(EFFORTS.index(level) - at),
                                          -EFFORTS.index(level)))


def budget_effort(budget: int | None) -> str | None:
    """An Anthropic thinking budget as an OpenAI reasoning effort."""
    if not budget:
        return None
    return "low" if budget < 4096 else "medium" if budget < 16384 else "high"
