"""The response tap and in-stream failure for the OpenAI Responses API (SPEC §13.1, §7)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from orca_cli.wire.errors import error_body, error_type, stream_error_event
from orca_cli.wire.sse import SSEDecoder
from orca_cli.wire.usage import ResponseTap, Usage

HEAD = {"id": "resp_abc", "object": "response", "created_at": 1700000000, "model": "gpt-5"}
USAGE = {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 1024},
         "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 12},
         "total_tokens": 1240}


def ev(seq: int, kind: str, **fields: Any) -> bytes:
    data = {"type": kind, "sequence_number": seq, **fields}
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def text_stream(final: str = "response.completed", **final_fields: Any) -> list[bytes]:
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress",
            "content": []}
    done_response = {**HEAD, "status": final.split(".")[1], "usage": USAGE, **final_fields}
    return [
        ev(0, "response.created", response={**HEAD, "status": "in_progress"}),
        ev(1, "response.in_progress", response={**HEAD, "status": "in_progress"}),
        ev(2, "response.output_item.added", output_index=0, item=item),
        ev(3, "response.content_part.added", output_index=0, content_index=0, item_id="msg_1",
           part={"type": "output_text", "text": "", "annotations": []}),
        ev(4, "response.output_text.delta", output_index=0, content_index=0, item_id="msg_1",
           delta="Hello"),
        ev(5, "response.output_text.delta", output_index=0, content_index=0, item_id="msg_1",
           delta=" world"),
        ev(6, "response.output_text.done", output_index=0, content_index=0, item_id="msg_1",
           text="Hello world"),
        ev(7, final, response=done_response),
    ]


def tap_stream(chunks: list[bytes], max_tokens: int | None = None) -> ResponseTap:
    tap = ResponseTap("responses", True, max_tokens)
    for chunk in chunks:
        # split every event across two feeds: the decoder must join them
        tap.feed(chunk[:7])
        tap.feed(chunk[7:])
    return tap


def test_completed_stream_reports_usage_and_a_clean_end() -> None:
    tap = tap_stream(text_stream())
    assert tap.usage == Usage(prompt_tokens=1200, cached_tokens=1024, output_tokens=40)
    assert tap.completed and tap.billed_success
    assert tap.finish_reason == "completed"
    assert tap.signals() == ()
    assert tap.response_head() == {"id": "resp_abc", "created_at": 1700000000, "model": "gpt-5"}
    assert tap.next_sequence_number == 8


def test_stream_without_its_final_event_is_not_a_clean_end() -> None:
    tap = tap_stream(text_stream()[:-1])
    assert not tap.completed and not tap.billed_success and tap.usage is None
    assert tap.next_sequence_number == 7


@pytest.mark.parametrize(("max_tokens", "signals"), [(2048, ("truncated",)), (256, ())])
def test_incomplete_on_max_output_tokens_is_a_truncation(
    max_tokens: int, signals: tuple[str, ...]
) -> None:
    chunks = text_stream("response.incomplete",
                         incomplete_details={"reason": "max_output_tokens"})
    tap = tap_stream(chunks, max_tokens)
    assert tap.completed and tap.billed_success
    assert tap.finish_reason == "max_output_tokens"
    assert tap.signals() == signals
    assert tap.usage is not None and tap.usage.output_tokens == 40


def test_failed_event_ends_in_error_with_its_message() -> None:
    chunks = text_stream("response.failed",
                         error={"code": "server_error", "message": "upstream melted"})
    tap = tap_stream(chunks)
    assert tap.error_finish and not tap.billed_success
    assert tap.error_message == "upstream melted"


def test_top_level_error_event_ends_in_error() -> None:
    chunks = text_stream()[:3] + [ev(3, "error", code="rate_limit_exceeded",
                                     message="slow down", param=None)]
    tap = tap_stream(chunks)
    assert tap.error_finish and tap.error_message == "slow down"


def _call_stream(arguments: list[str], done_args: str | None) -> list[bytes]:
    item = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "shell",
            "arguments": "", "status": "in_progress"}
    out = [ev(0, "response.created", response={**HEAD, "status": "in_progress"}),
           ev(1, "response.output_item.added", output_index=0, item=item)]
    seq = 2
    for part in arguments:
        out.append(ev(seq, "response.function_call_arguments.delta", output_index=0,
                      item_id="fc_1", delta=part))
        seq += 1
    if done_args is not None:
        out.append(ev(seq, "response.function_call_arguments.done", output_index=0,
                      item_id="fc_1", arguments=done_args))
    out.append(ev(seq + 1, "response.completed",
                  response={**HEAD, "status": "completed", "usage": USAGE}))
    return out


def test_function_call_arguments_are_checked_as_json() -> None:
    good = tap_stream(_call_stream(['{"command":', '["ls"]}'], '{"command":["ls"]}'))
    assert good.has_tool_call and not good.empty_answer
    assert good.tool_arguments() == {0: '{"command":["ls"]}'}
    assert good.signals() == ()
    bad = tap_stream(_call_stream(['{"command":', '["ls"'], None))
    assert bad.signals() == ("malformed_tool_json",)


def test_custom_tool_input_is_freeform_not_json() -> None:
    item = {"id": "ct_1", "type": "custom_tool_call", "call_id": "c", "name": "apply_patch",
            "input": ""}
    chunks = [ev(0, "response.output_item.added", output_index=0, item=item),
              ev(1, "response.custom_tool_call_input.delta", output_index=0, delta="*** Begin"),
              ev(2, "response.completed",
                 response={**HEAD, "status": "completed", "usage": USAGE})]
    tap = tap_stream(chunks)
    assert tap.has_tool_call and tap.signals() == ()


def test_empty_completed_answer_is_an_empty_answer_signal() -> None:
    chunks = [ev(0, "response.created", response=HEAD),
              ev(1, "response.completed", response={**HEAD, "status": "completed",
                                                    "output": [], "usage": USAGE})]
    assert tap_stream(chunks).signals() == ("empty_answer",)


def _body(**fields: Any) -> bytes:
    return orjson.dumps({**HEAD, "status": "completed", "error": None,
                         "incomplete_details": None, "usage": USAGE, **fields})


def test_json_body_text_and_usage() -> None:
    tap = ResponseTap("responses", False, None)
    tap.feed_body(_body(output=[
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "hi", "annotations": []}]},
    ]))
    assert tap.billed_success and tap.signals() == ()
    assert tap.usage == Usage(prompt_tokens=1200, cached_tokens=1024, output_tokens=40)


def test_json_body_function_call_and_truncation() -> None:
    tap = ResponseTap("responses", False, 4096)
    tap.feed_body(_body(status="incomplete", incomplete_details={"reason": "max_output_tokens"},
                        output=[{"type": "function_call", "name": "f", "call_id": "c",
                                 "arguments": '{"a": '}]))
    assert tap.completed
    assert set(tap.signals()) == {"malformed_tool_json", "truncated"}


def test_json_error_body_and_failed_response() -> None:
    tap = ResponseTap("responses", False, None)
    tap.feed_body(error_body("responses", 429, "too many"))
    assert tap.error_finish and tap.error_message == "too many" and not tap.completed
    failed = ResponseTap("responses", False, None)
    failed.feed_body(_body(status="failed", output=[],
                           error={"code": "server_error", "message": "boom"}))
    assert failed.error_finish and not failed.billed_success


def test_error_body_has_the_openai_shape() -> None:
    doc = orjson.loads(error_body("responses", 404, "no model x"))
    assert doc == {"error": {"message": "no model x", "type": "invalid_request_error",
                             "param": None, "code": "model_not_found"}}
    assert error_type("responses", 503) == "server_error"


def test_stream_failure_is_a_response_failed_event_continuing_the_stream() -> None:
    tap = tap_stream(text_stream()[:-2])
    raw = stream_error_event("responses", "upstream stream failed: reset\x00",
                             response=tap.response_head(),
                             sequence_number=tap.next_sequence_number)
    events = SSEDecoder().feed_pairs(raw)
    assert len(events) == 1
    name, data = events[0]
    assert name == "response.failed"
    doc = orjson.loads(data)
    assert doc["type"] == "response.failed" and doc["sequence_number"] == 6
    resp = doc["response"]
    assert (resp["id"], resp["model"], resp["status"]) == ("resp_abc", "gpt-5", "failed")
    assert resp["error"] == {"code": "server_error", "message": "upstream stream failed: reset"}
    # the tap reading its own failure event sees an error end, never a clean one
    tap.feed(raw)
    assert tap.error_finish and not tap.billed_success


def test_stream_failure_without_a_head_still_parses() -> None:
    raw = stream_error_event("responses", "x", "rate_limit_exceeded")
    _, data = SSEDecoder().feed_pairs(raw)[0]
    doc = orjson.loads(data)
    assert doc["response"]["error"]["code"] == "rate_limit_exceeded"
    assert doc["response"]["id"].startswith("resp_")


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_tap_failure_event_is_the_module_event_for_other_formats(api: str) -> None:
    tap = ResponseTap(api, True, None)  # type: ignore[arg-type]
    assert tap.stream_error_event("boom") == stream_error_event(api, "boom")  # type: ignore[arg-type]


def test_tap_failure_event_continues_a_responses_stream() -> None:
    tap = tap_stream(text_stream()[:5])
    _, data = SSEDecoder().feed_pairs(tap.stream_error_event("upstream stream failed"))[0]
    doc = orjson.loads(data)
    assert doc["sequence_number"] == 5 and doc["response"]["id"] == "resp_abc"
    assert doc["response"]["status"] == "failed"
