"""Whether a request needs a model that reads images (`wire.estimate.needs_vision`): what
excludes a model with `vision = false`. Image and PDF parts of each format, in a message's
content or a tool result's, by data URL or by URL; never a plain-text document, a word in a
text, a tool's schema or the system prompt."""

from __future__ import annotations

from typing import Any

import pytest

from orca_cli.wire.estimate import needs_vision

URL = "data:image/png;base64,iVBORw0KGgo="
ANT_IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo="}}

WITH: dict[str, dict[str, Any]] = {
    "chat user": {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is it"},
        {"type": "image_url", "image_url": {"url": URL}}]}]},
    "chat by url": {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}]},
    "chat tool message": {"messages": [
        {"role": "tool", "tool_call_id": "c1", "content": [
            {"type": "image_url", "image_url": {"url": URL}}]}]},
    "anthropic user": {"messages": [{"role": "user", "content": [ANT_IMAGE]}]},
    "anthropic tool result": {"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": [ANT_IMAGE]}]}]},
    "anthropic earlier turn": {"messages": [
        {"role": "user", "content": [ANT_IMAGE]}, {"role": "assistant", "content": "a cat"},
        {"role": "user", "content": "and now?"}]},
    "responses message": {"input": [{"type": "message", "role": "user", "content": [
        {"type": "input_image", "image_url": URL}]}]},
    "responses tool output": {"input": [{"type": "function_call_output", "call_id": "c1",
                                         "output": [{"type": "input_image",
                                                     "image_url": URL}]}]},
    "anthropic pdf in a tool result": {"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": [
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                            "data": "JVBERi0x"}}]}]}]},
    "chat pdf": {"messages": [{"role": "user", "content": [
        {"type": "file", "file": {"filename": "a.pdf",
                                  "file_data": "data:application/pdf;base64,JVBERi0x"}}]}]},
    "responses pdf": {"input": [{"type": "message", "role": "user", "content": [
        {"type": "input_file", "filename": "a.pdf",
         "file_data": "data:application/pdf;base64,JVBERi0x"}]}]},
}
WITHOUT: dict[str, dict[str, Any]] = {
    "text mentioning images": {"messages": [{"role": "user", "content": [
        {"type": "text", "text": '{"type": "image"} and an image_url'}]}]},
    "string contents": {"messages": [{"role": "user", "content": "image"}]},
    "a tool named image": {"tools": [{"name": "image", "input_schema": {
        "type": "object", "properties": {"type": {"const": "image"}}}}],
        "messages": [{"role": "user", "content": "draw"}]},
    "responses text": {"input": "describe the image", "instructions": "image"},
    "no conversation": {"prompt": "image"},
    "anthropic plain-text document": {"messages": [{"role": "user", "content": [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                        "data": "notes"}}]}]},
}


@pytest.mark.parametrize("name", list(WITH))
def test_an_image_part_anywhere_in_the_conversation_is_found(name: str) -> None:
    assert needs_vision(WITH[name])


@pytest.mark.parametrize("name", list(WITHOUT))
def test_no_image_part_is_no_image(name: str) -> None:
    assert not needs_vision(WITHOUT[name])
