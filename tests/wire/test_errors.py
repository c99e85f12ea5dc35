"""orca's own error bodies and in-stream errors (SPEC §1.2, §7)."""

from __future__ import annotations

import orjson
import pytest

from orca_cli.wire.errors import error_body, error_type, stream_error_event
from orca_cli.wire.sse import SSEDecoder
from orca_cli.wire.usage import ResponseTap


@pytest.mark.parametrize(
    ("status", "anthropic_type", "openai_type"),
    [
        (400, "invalid_request_error", "invalid_request_error"),
        (401, "authentication_error", "authentication_error"),
        (403, "permission_error", "permission_error"),
        (404, "not_found_error", "invalid_request_error"),  # OpenAI: code model_not_found
        (413, "request_too_large", "invalid_request_error"),
        (415, "invalid_request_error", "invalid_request_error"),
        (429, "rate_limit_error", "rate_limit_error"),
        (500, "api_error", "server_error"),
        (503, "overloaded_error", "server_error"),
        (418, "invalid_request_error", "invalid_request_error"),
        (599, "api_error", "server_error"),
    ],
)
def test_type_names_per_status(status: int, anthropic_type: str, openai_type: str) -> None:
    assert error_type("anthropic", status) == anthropic_type
    assert error_type("openai", status) == openai_type


def test_anthropic_shape() -> None:
    body = orjson.loads(error_body("anthropic", 404, "unknown model 'x'; available: a, b"))
    assert body == {
        "type": "error",
        "error": {"type": "not_found_error", "message": "unknown model 'x'; available: a, b"},
    }


def test_openai_shape() -> None:
    body = orjson.loads(error_body("openai", 429, "share cap reached"))
    assert body == {
        "error": {
            "message": "share cap reached",
            "type": "rate_limit_error",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }


def test_kind_and_code_override() -> None:
    body = orjson.loads(
        error_body("openai", 503, "no upstream", kind="orca_unavailable", code="no_candidate")
    )
    assert body["error"]["type"] == "orca_unavailable" and body["error"]["code"] == "no_candidate"


def test_control_characters_are_stripped_and_length_bounded() -> None:
    msg = orjson.loads(error_body("anthropic", 400, "bad\r\nX-Evil: 1\x00" + "y" * 5000))["error"][
        "message"
    ]
    assert "\r" not in msg and "\n" not in msg and "\x00" not in msg
    assert msg.startswith("badX-Evil: 1") and len(msg) <= 2000


async def test_the_official_sdks_raise_the_right_error_with_our_message() -> None:
    import importlib

    import anthropic
    import httpx
    import openai

    def answer(lib: object, status: int, api: str) -> object:
        def handler(request: object) -> object:
            return lib.Response(  # type: ignore[attr-defined]
                status,
                content=error_body(api, status, "unknown model 'x'"),  # type: ignore[arg-type]
                headers={"content-type": "application/json", "x-should-retry": "false"},
            )

        return lib.AsyncClient(transport=lib.MockTransport(handler))  # type: ignore[attr-defined]

    oc = openai.AsyncOpenAI(
        api_key="k",
        base_url="http://o.test/v1",
        http_client=answer(httpx, 404, "openai"),
        max_retries=0,
    )  # type: ignore[arg-type]
    with pytest.raises(openai.NotFoundError) as oe:
        await oc.chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}])
    assert "unknown model 'x'" in str(oe.value)
    await oc.close()

    lib = (
        importlib.import_module("httpx2")
        if int(anthropic.__version__.split(".")[0]) >= 2
        else httpx
    )
    ac = anthropic.AsyncAnthropic(
        api_key="k",
        base_url="http://a.test",
        http_client=answer(lib, 413, "anthropic"),
        max_retries=0,
    )  # type: ignore[arg-type]
    with pytest.raises(anthropic.APIStatusError) as ae:
        await ac.messages.create(
            model="x", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert ae.value.status_code == 413 and "unknown model 'x'" in str(ae.value)
    assert ae.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]
    await ac.close()


def test_anthropic_stream_error_event_decodes_and_taps_as_error() -> None:
    raw = stream_error_event("anthropic", "upstream stream broke", "overloaded_error")
    events = SSEDecoder().feed(raw)
    assert [e.event for e in events] == ["error"]
    assert orjson.loads(events[0].data) == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "upstream stream broke"},
    }
    tap = ResponseTap("anthropic", True, None)
    tap.feed(raw)
    assert tap.error_finish and not tap.completed


def test_openai_stream_error_chunk_decodes_and_taps_as_error() -> None:
    raw = stream_error_event("openai", "upstream timed out")
    events = SSEDecoder().feed(raw)
    assert raw.startswith(b"data: ") and [e.event for e in events] == [None]
    assert orjson.loads(events[0].data)["error"]["message"] == "upstream timed out"
    tap = ResponseTap("openai", True, None)
    tap.feed(raw)
    assert tap.error_finish and not tap.completed
