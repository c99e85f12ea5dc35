"""The request's token estimate for the context-overflow check (SPEC §14.3).

Text counts one token per 4 body bytes (`len(raw) // 4`). A binary payload sent inline as
base64 is not text: a provider counts an image by its pixels, a PDF by its pages and audio by
its length, never by its base64 bytes (a 900 KB screenshot is 1.2 MB of base64, ≈ 300k tokens
by bytes, ≈ 1.6k as Claude counts it). Such a payload's bytes leave the byte count and the
item counts a bounded figure instead, one at or above what a provider charges for it:

* an image (Chat Completions `image_url`, Responses `input_image`, Anthropic `image`):
  `IMAGE_TOKENS`, whatever its size;
* a PDF (Chat Completions `file`, Responses `input_file`, Anthropic `document`):
  `PDF_PAGE_TOKENS` a page when its pages can be counted, else its bytes as text;
* audio (`input_audio`): one token per `AUDIO_CHARS_PER_TOKEN` base64 characters;
* any other inline file (base64 plain text, say) keeps its bytes.

No item counts more than its bytes did (bytes / 4, the estimate before this rule), so the rule
only ever lowers an estimate: it ends refusals of what a candidate can take and adds none. An
image or file named by URL or file id is small in the body and counts as its bytes.

Hot path: a body whose bytes / 4 fit the smallest window (`fits`) is not looked at; one that
does not has its conversation's blocks walked for a media part (`_in_conversation`: 98 µs
over a 760 KB Claude Code body of 600 messages, where searching its bytes for three
substrings took 1.5 ms), and only a body with one walks its whole parsed tree. A media part
anywhere else (inside a tool call's arguments, say) is text to a provider, and counts as
its bytes.

`needs_vision` tells, from the same part types, whether a request carries an image or a PDF:
a model with `vision = false` is no candidate for it.
"""

from __future__ import annotations

import binascii
import re
import zlib
from collections.abc import Mapping
from typing import Any

__all__ = [
    "AUDIO_CHARS_PER_TOKEN",
    "IMAGE_TOKENS",
    "PDF_PAGE_TOKENS",
    "estimate_tokens",
    "needs_vision",
]

# The most a provider charges for one image, rounded up: Anthropic resizes to a 1568 px long
# edge, ≈ 1,600 tokens at most (docs.claude.com "Vision": tokens ≈ width × height / 750), up
# to ≈ 4,784 for models that read 3.75 MP images; OpenAI's tiled models at
# `detail: high` at most 85 + 8 × 170 = 1,445, its patch models 1,536 patches × 2.46
# (gpt-4.1-nano) = 3,779 (platform.openai.com "Images and vision"); Gemini 3 1,120 at
# `media_resolution: high`. A provider charging more answers its own overflow (§14.3).
IMAGE_TOKENS = 5_000
# A PDF page: Anthropic's PDF guide gives 1,500-3,000 text tokens a page plus the page as an
# image (≤ 1,600, as above) = 4,600, rounded up; Gemini counts 258 a page.
PDF_PAGE_TOKENS = 5_000
# Audio: Gemini counts 32 tokens a second, OpenAI's audio models about 10; at 8 kbit/s (the
# lowest MP3 rate) a second is 1,000 bytes, 1,333 base64 characters, so one token per 41
# characters at most; 32 keeps a margin.
AUDIO_CHARS_PER_TOKEN = 32

_IMAGE_PARTS = frozenset({"image_url", "input_image", "image"})
_MEDIA_PARTS = _IMAGE_PARTS | {"file", "input_file", "document", "input_audio"}
_MAX_INFLATED = 16 << 20  # per object stream: a deflate bomb stops here
_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_OBJECT_STREAM = re.compile(rb"/Type\s*/ObjStm\b[^>]*>>\s*stream\r?\n")


def estimate_tokens(raw: bytes, body: Mapping[str, Any], *, fits: int = 0) -> int:
    """The request's input tokens, estimated: its bytes / 4, with each inline image, PDF and
    audio payload counted by its bounded figure instead of its base64 bytes.

    `fits`: the smallest context window the estimate is compared with. An item never counts
    more than its bytes, so bytes / 4 at or under it already fits every window and is
    returned as it is, unscanned: the common body costs one division."""
    est = len(raw) // 4
    if est <= fits or not _in_conversation(body, _MEDIA_PARTS, True):
        return est
    payload_chars, tokens = _inline_media(body)
    return min(est, max(0, len(raw) - payload_chars) // 4 + tokens)


def _inline_media(body: Mapping[str, Any]) -> tuple[int, int]:
    """(base64 characters, tokens) of the body's inline media parts, wherever they sit (a
    message's content, an Anthropic `tool_result`, a Responses tool output)."""
    chars = tokens = 0
    stack: list[Any] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, (dict, list)))
            continue
        kind = node.get("type")
        if kind in _MEDIA_PARTS:
            found = _payload(node, kind)
            if found is not None:
                counted = _counted(kind, *found)
                if counted is not None:
                    chars += len(found[1])
                    tokens += min(counted, len(found[1]) // 4)
                continue
        stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
    return chars, tokens


def _payload(part: dict[str, Any], kind: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a media part that carries its bytes inline, else None."""
    if kind in ("image", "document"):  # Anthropic: `source: {type: base64, media_type, data}`
        src = part.get("source")
        if isinstance(src, dict) and src.get("type") == "base64":
            data, media = src.get("data"), src.get("media_type")
            if isinstance(data, str):
                return (media if isinstance(media, str) else ""), data
        return None
    if kind == "input_audio":  # Chat Completions: `input_audio: {data, format}`, bare base64
        spec = part.get("input_audio")
        data = spec.get("data") if isinstance(spec, dict) else None
        return ("audio/", data) if isinstance(data, str) else None
    if kind == "image_url":
        spec = part.get("image_url")
        url = spec.get("url") if isinstance(spec, dict) else spec
    elif kind == "file":
        spec = part.get("file")
        url = spec.get("file_data") if isinstance(spec, dict) else None
    else:  # Responses `input_image` / `input_file`
        url = part.get("image_url" if kind == "input_image" else "file_data")
    return _data_url(url) if isinstance(url, str) else None


def _data_url(url: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a `data:<media type>;base64,<data>` URL, else None."""
    if not url.startswith("data:"):
        return None
    head = url[:url.find(",", 0, 256) + 1]  # the comma is sought in the head alone
    if not head.endswith(";base64,"):
        return None
    return head[5:-8], url[len(head):]


def _counted(kind: str, media: str, data: str) -> int | None:
    """The tokens one inline payload counts; None: it counts as its bytes (text)."""
    if kind in _IMAGE_PARTS or media.startswith("image/"):
        return IMAGE_TOKENS
    if kind == "input_audio" or media.startswith("audio/"):
        return -(-len(data) // AUDIO_CHARS_PER_TOKEN)
    if media == "application/pdf":
        pages = pdf_pages(data)
        return pages * PDF_PAGE_TOKENS if pages else None
    return None


def pdf_pages(data: str) -> int:
    """The page objects of a base64 PDF (`/Type /Page`), those in compressed object streams
    included; 0 when none can be read (the caller then counts its bytes)."""
    try:
        pdf = binascii.a2b_base64(data)
    except (binascii.Error, ValueError):
        return 0
    pages = len(_PAGE.findall(pdf))
    if pages:
        return pages
    for found in _OBJECT_STREAM.finditer(pdf):
        try:
            inflated = zlib.decompressobj().decompress(memoryview(pdf)[found.end():],
                                                       _MAX_INFLATED)
        except zlib.error:
            continue
        pages += len(_PAGE.findall(inflated))
    return pages


def needs_vision(body: Mapping[str, Any]) -> bool:
    """Whether the request needs a model that reads images (`vision`): an image part, inline
    or by URL, or a document part — a PDF, whose pages a provider reads as images (Anthropic
    `document` but a plain-text one, Chat Completions `file`, Responses `input_file`) — in the
    conversation (`_in_conversation`)."""
    return _in_conversation(body, _VISUAL, False)


def _in_conversation(body: Mapping[str, Any], kinds: frozenset[str],
                     text_documents: bool) -> bool:
    """Whether a part of one of `kinds` sits in the conversation: in a message's content (Chat
    Completions `messages`, Anthropic `messages`, Responses `input` items) or in a tool
    result's (an Anthropic `tool_result`, a Chat Completions tool message, a Responses
    `function_call_output`); a plain-text Anthropic document counts only with
    `text_documents`. Only the conversation is walked, block by block, never the system
    prompt or the tools. One loop, exact class checks and no call a block: about 0.17 µs a
    message of an agent's transcript, where a search of the raw bytes for a substring ran at
    about 1.5 GB/s (1.5 ms for three over a 760 KB body)."""
    items = body.get("messages")
    if items.__class__ is not list:
        items = body.get("input")
        if items.__class__ is not list:
            return False
    for item in items:
        if item.__class__ is not dict:
            continue
        parts = item.get("content")
        if parts.__class__ is not list:
            parts = item.get("output")  # a Responses function_call_output
            if parts.__class__ is not list:
                continue
        for part in parts:
            if part.__class__ is dict:
                kind = part.get("type")
                if kind in kinds and (text_documents or _visual(part, kind)):
                    return True
                if kind == "tool_result":
                    inner = part.get("content")
                    if inner.__class__ is list:
                        for p in inner:
                            if p.__class__ is dict:
                                kind = p.get("type")
                                if kind in kinds and (text_documents or _visual(p, kind)):
                                    return True
    return False


_VISUAL = _IMAGE_PARTS | {"document", "file", "input_file"}


def _visual(part: dict[str, Any], kind: str) -> bool:
    """An image, or a document that is not plain text (an Anthropic `text` or `content`
    source is read as text)."""
    if kind != "document":
        return True
    source = part.get("source")
    return not (isinstance(source, dict) and source.get("type") in ("text", "content"))
