"""The token estimate of the context-overflow check (SPEC §14.3): inline media count as items,
not as their base64 bytes; everything else as bytes / 4."""

from __future__ import annotations

import base64
import zlib
from typing import Any

import orjson
import pytest

from orca_cli.wire.estimate import (
    AUDIO_CHARS_PER_TOKEN,
    IMAGE_TOKENS,
    PDF_PAGE_TOKENS,
    estimate_tokens,
    pdf_pages,
)

B64 = base64.b64encode(bytes(range(256)) * 1_000).decode()  # 341 KB of base64
URL = "data:image/png;base64," + B64
ASK = {"type": "text", "text": "what is this"}


def _est(body: dict[str, Any], **kw: int) -> tuple[int, int]:
    raw = orjson.dumps(body)
    return estimate_tokens(raw, body, **kw), len(raw)


def _rest(body: dict[str, Any], payload: str) -> int:
    """bytes / 4 of the body without its payload."""
    return (len(orjson.dumps(body)) - len(payload)) // 4


def _user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": list(parts)}]}


IMAGES = {
    "openai": _user({"type": "image_url", "image_url": {"url": URL, "detail": "high"}}, ASK),
    "openai-bare-url": _user({"type": "image_url", "image_url": URL}, ASK),
    "anthropic": _user({"type": "image", "source": {"type": "base64",
                                                   "media_type": "image/png", "data": B64}}, ASK),
    "responses": {"model": "m", "input": [{"type": "message", "role": "user", "content": [
        {"type": "input_image", "image_url": URL}, {"type": "input_text", "text": "what"}]}]},
    "anthropic-tool-result": _user({"type": "tool_result", "tool_use_id": "t", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                     "data": B64}}]}),
    "responses-tool-output": {"model": "m", "input": [{"type": "function_call_output",
                                                       "call_id": "c", "output": [
        {"type": "input_image", "image_url": URL}]}]},
}


@pytest.mark.parametrize("shape", sorted(IMAGES))
def test_an_inline_image_counts_the_image_figure_not_its_bytes(shape: str) -> None:
    body = IMAGES[shape]
    est, size = _est(body)
    assert size // 4 > 80_000
    assert est == _rest(body, B64) + IMAGE_TOKENS


def test_two_images_count_twice() -> None:
    part = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": B64}}
    body = _user(part, part, ASK)
    assert _est(body)[0] == (len(orjson.dumps(body)) - 2 * len(B64)) // 4 + 2 * IMAGE_TOKENS


def test_a_small_image_never_counts_more_than_its_bytes() -> None:
    tiny = base64.b64encode(b"\x89PNG" + bytes(60)).decode()
    body = _user({"type": "image_url", "image_url": {"url": "data:image/png;base64," + tiny}})
    est, size = _est(body)
    assert est == size // 4


@pytest.mark.parametrize("body", [
    _user({"type": "text", "text": 'import base64; base64.b64decode("data:x;base64,AAAA")'}),
    _user({"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}),
    _user({"type": "text", "text": "data:image/png;base64," + B64}),  # pasted as text: text
])
def test_a_body_without_inline_media_is_its_bytes_over_four(body: dict[str, Any]) -> None:
    est, size = _est(body)
    assert est == size // 4


def test_a_body_whose_conversation_holds_no_media_part_is_not_walked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the window, only the conversation's blocks are looked at for a media part: a
    long text, a tool's schema or a tool call's arguments that spell an image out are not
    one (a provider reads them as text), so the whole tree is never walked for them."""
    from orca_cli.wire import estimate

    def walked(_body: Any) -> tuple[int, int]:
        raise AssertionError("the whole tree was walked")

    monkeypatch.setattr(estimate, "_inline_media", walked)
    spelled = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                           "data": B64}}
    body = {"tools": [{"name": "show", "input_schema": {"default": spelled}}], "messages": [
        {"role": "user", "content": "word " * 20_000},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "show",
                                           "input": {"picture": spelled}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "shown"}]}]}
    est, size = _est(body, fits=1)
    assert est == size // 4


def test_a_body_that_fits_the_smallest_window_is_not_scanned() -> None:
    body = IMAGES["anthropic"]
    est, size = _est(body, fits=10**9)
    assert est == size // 4  # every window takes it as it is: nothing to look for


def _pdf(pages: int, *, object_stream: bool = False) -> bytes:
    objects = b"".join(b"%d 0 obj << /Type /Page /Parent 2 0 R >> endobj\n" % (3 + i)
                       for i in range(pages))
    tree = b"2 0 obj << /Type /Pages /Count %d >> endobj\n" % pages
    if object_stream:
        packed = zlib.compress(objects + tree)
        body = (b"9 0 obj << /Type /ObjStm /N %d /Filter /FlateDecode /Length %d >>\nstream\n"
                % (pages + 1, len(packed)) + packed + b"\nendstream endobj\n")
    else:
        body = objects + tree
    return b"%PDF-1.7\n" + body + b"%" + bytes(range(256)) * 400 + b"\n%%EOF\n"


@pytest.mark.parametrize("packed", [False, True])
def test_a_pdf_counts_its_pages(packed: bool) -> None:
    pdf = base64.b64encode(_pdf(3, object_stream=packed)).decode()
    assert pdf_pages(pdf) == 3
    shapes = [
        _user({"type": "document", "source": {"type": "base64",
                                              "media_type": "application/pdf", "data": pdf}}),
        _user({"type": "file", "file": {"filename": "a.pdf",
                                        "file_data": "data:application/pdf;base64," + pdf}}),
        {"model": "m", "input": [{"role": "user", "content": [
            {"type": "input_file", "filename": "a.pdf",
             "file_data": "data:application/pdf;base64," + pdf}]}]},
    ]
    for body in shapes:
        est, size = _est(body)
        assert est == min(size // 4, _rest(body, pdf) + 3 * PDF_PAGE_TOKENS)


def test_a_pdf_whose_pages_cannot_be_read_counts_its_bytes() -> None:
    pdf = base64.b64encode(b"%PDF-1.7\n" + bytes(range(256)) * 400).decode()
    body = _user({"type": "document", "source": {"type": "base64",
                                                 "media_type": "application/pdf", "data": pdf}})
    est, size = _est(body)
    assert est == size // 4


def test_inline_audio_counts_by_its_length() -> None:
    body = _user({"type": "input_audio", "input_audio": {"data": B64, "format": "mp3"}})
    est, _ = _est(body)
    assert est == _rest(body, B64) + -(-len(B64) // AUDIO_CHARS_PER_TOKEN)


def test_plain_text_sent_as_a_base64_file_keeps_its_bytes() -> None:
    body = _user({"type": "document", "source": {"type": "base64", "media_type": "text/plain",
                                                 "data": B64}})
    est, size = _est(body)
    assert est == size // 4
