"""Error codes across formats (SPEC §13.2 rule 8, §14.3): an agent acts on the code of an
error (Codex compacts on `context_length_exceeded`, Claude Code on "prompt is too long"), so a
translated error carries the code the inbound provider would have given; and Chat Completions
parameters no other format can honour are refused like `n` (rule 5)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from orca_cli.translate import TranslationOptions, translate_error, translate_request
from orca_cli.types import Api
from tests.translate.samples import openai_request

ANTHROPIC_OVERFLOW = orjson.dumps({"type": "error", "error": {
    "type": "invalid_request_error",
    "message": "prompt is too long: 300000 tokens > 200000 maximum"}})
OPENAI_OVERFLOW = orjson.dumps({"error": {
    "message": "This model's maximum context length is 128000 tokens. However, your messages "
               "resulted in 300000 tokens. Please reduce the length of the messages.",
    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
OPENAI_SHAPES: list[Api] = ["openai", "responses"]


def _error(src: Api, dst: Api, status: int, body: bytes) -> tuple[int, dict[str, Any]]:
    out_status, out = translate_error(src, dst, status, body)
    doc: dict[str, Any] = orjson.loads(out)
    return out_status, doc["error"]


@pytest.mark.parametrize("dst", OPENAI_SHAPES)
def test_anthropic_prompt_too_long_is_context_length_exceeded(dst: Api) -> None:
    status, err = _error("anthropic", dst, 400, ANTHROPIC_OVERFLOW)
    assert status == 400
    assert (err["type"], err["code"]) == ("invalid_request_error", "context_length_exceeded")
    assert err["message"] == "prompt is too long: 300000 tokens > 200000 maximum"


@pytest.mark.parametrize("src", OPENAI_SHAPES)
def test_context_length_exceeded_is_anthropic_prompt_too_long(src: Api) -> None:
    status, err = _error(src, "anthropic", 400, OPENAI_OVERFLOW)
    assert status == 400
    assert err == {"type": "invalid_request_error",
                   "message": "prompt is too long: 300000 tokens > 128000 maximum"}
    # Without numbers to read, the message still opens the way Claude Code recognises.
    bare = orjson.dumps({"error": {"message": "Your input exceeds the context window of this "
                                              "model.", "type": "invalid_request_error",
                                   "code": "context_length_exceeded"}})
    _, err = _error(src, "anthropic", 400, bare)
    assert err["message"] == ("prompt is too long: Your input exceeds the context window of "
                              "this model.")


@pytest.mark.parametrize(("src", "dst"), [("openai", "responses"), ("responses", "openai")])
@pytest.mark.parametrize(("status", "code"), [
    (400, "context_length_exceeded"), (429, "rate_limit_exceeded"), (429, "insufficient_quota"),
    (400, "invalid_prompt"), (400, None)])
def test_between_openai_shapes_the_code_is_kept(src: Api, dst: Api, status: int,
                                                code: str | None) -> None:
    body = orjson.dumps({"error": {"message": "Nope.", "type": "invalid_request_error",
                                   "param": None, "code": code}})
    out_status, err = _error(src, dst, status, body)
    assert (out_status, err["code"], err["message"]) == (status, code, "Nope.")


@pytest.mark.parametrize("dst", OPENAI_SHAPES)
def test_an_anthropic_rate_limit_is_rate_limit_exceeded(dst: Api) -> None:
    body = orjson.dumps({"type": "error", "error": {"type": "rate_limit_error",
                                                    "message": "slow down"}})
    status, err = _error("anthropic", dst, 429, body)
    assert (status, err["code"], err["message"]) == (429, "rate_limit_exceeded", "slow down")
    other = orjson.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                     "message": "bad tool schema"}})
    assert _error("anthropic", dst, 400, other)[1]["code"] is None


@pytest.mark.parametrize("dst", ["anthropic", "responses"])
def test_chat_logprobs_are_untranslatable(dst: Api) -> None:
    for asked, expected in ((True, ["logprobs"]), (False, []), (None, [])):
        body = openai_request()
        if asked is not None:
            body["logprobs"] = asked
            body["top_logprobs"] = 3 if asked else None
        out = translate_request(body, "openai", dst, model="m",
                                target_model_family="anthropic" if dst == "anthropic"
                                else "openai", options=TranslationOptions())
        assert out.report["untranslatable"] == expected
