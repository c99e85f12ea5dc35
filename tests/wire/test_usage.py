"""Response taps on real-shaped streams and bodies of both formats (SPEC §3 step 8, §6.3)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from orca_cli.wire.usage import ResponseTap, Usage


def oai(obj: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def ant(name: str, obj: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"


HEAD = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "gpt-4o-mini",
    "system_fingerprint": "fp_1",
}


def chunk(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> bytes:
    return oai(
        {
            **HEAD,
            "choices": [
                {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
            ],
            "usage": None,
        }
    )


USAGE_CHUNK = oai(
    {
        **HEAD,
        "choices": [],
        "usage": {
            "prompt_tokens": 2006,
            "completion_tokens": 300,
            "total_tokens": 2306,
            "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
    }
)
DONE = b"data: [DONE]\n\n"


def openai_text_stream(finish: str = "stop") -> list[bytes]:
    return [
        chunk({"role": "assistant", "content": "", "refusal": None}),
        chunk({"content": "The bug"}),
        chunk({"content": " is in parse()."}),
        chunk({}, finish),
        USAGE_CHUNK,
        DONE,
    ]


def openai_tool_stream(args0: str, args1: str) -> list[bytes]:
    out = [
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "read", "arguments": ""},
                    }
                ],
                "refusal": None,
            }
        )
    ]
    out.append(
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "grep", "arguments": ""},
                    }
                ]
            }
        )
    )
    for i in range(0, max(len(args0), len(args1)), 5):  # the two calls' arguments interleave
        if args0[i : i + 5]:
            out.append(
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": args0[i : i + 5]}}]})
            )
        if args1[i : i + 5]:
            out.append(
                chunk({"tool_calls": [{"index": 1, "function": {"arguments": args1[i : i + 5]}}]})
            )
    return [*out, chunk({}, "tool_calls"), USAGE_CHUNK, DONE]


def anthropic_stream(
    *,
    tool_json: str = '{"path": "src/main.py", "line": 42}',
    stop: str = "tool_use",
    end: bool = True,
) -> list[bytes]:
    out = [
        ant(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-haiku-4-5",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 50,
                        "cache_creation_input_tokens": 200,
                        "cache_read_input_tokens": 1000,
                        "output_tokens": 1,
                    },
                },
            },
        ),
        ant(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
        ),
        ant(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Let me look"},
            },
        ),
        ant(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "EqQB"},
            },
        ),
        ant("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ant("ping", {"type": "ping"}),
        ant(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        ant(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "Reading the file."},
            },
        ),
        ant("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ant(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "read_file",
                    "input": {},
                },
            },
        ),
    ]
    for i in range(0, len(tool_json), 6):
        out.append(
            ant(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 2,
                    "delta": {"type": "input_json_delta", "partial_json": tool_json[i : i + 6]},
                },
            )
        )
    out.append(ant("content_block_stop", {"type": "content_block_stop", "index": 2}))
    out.append(
        ant(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 89},
            },
        )
    )
    if end:
        out.append(ant("message_stop", {"type": "message_stop"}))
    return out


def run(
    api: str, chunks: list[bytes], max_tokens: int | None = None, *, bytewise: bool = False
) -> ResponseTap:
    tap = ResponseTap(api, True, max_tokens)  # type: ignore[arg-type]
    raw = b"".join(chunks)
    for piece in [raw[i : i + 1] for i in range(len(raw))] if bytewise else chunks:
        tap.feed(piece)
    return tap


def summary(tap: ResponseTap) -> tuple[Any, ...]:
    return (
        tap.usage,
        tap.finish_reason,
        tap.completed,
        tap.error_finish,
        tap.signals(),
        tap.tool_arguments(),
        tap.has_text,
        tap.has_tool_call,
    )


# --- OpenAI streams -------------------------------------------------------------------------------


def test_openai_text_stream_usage_with_cached_tokens() -> None:
    tap = run("openai", openai_text_stream())
    assert tap.usage == Usage(
        prompt_tokens=2006, cached_tokens=1920, cache_write_tokens=0, output_tokens=300
    )
    assert tap.finish_reason == "stop" and tap.completed and tap.billed_success
    assert tap.signals() == ()


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_byte_by_byte_feeding_gives_the_same_result(api: str) -> None:
    chunks = (
        openai_tool_stream('{"path": "a.py"}', '{"q": "ñ✓"}')
        if api == "openai"
        else anthropic_stream()
    )
    assert summary(run(api, chunks, bytewise=True)) == summary(run(api, chunks))


def test_openai_parallel_tool_calls_accumulate_per_index() -> None:
    a0, a1 = '{"path": "src/app.py", "start": 1}', '{"pattern": "def \\\\w+\\\\(", "glob": "*.py"}'
    tap = run("openai", openai_tool_stream(a0, a1))
    assert tap.tool_arguments() == {0: a0, 1: a1}
    assert tap.has_tool_call and not tap.malformed_tool_json
    assert tap.finish_reason == "tool_calls" and tap.signals() == ()


def test_openai_malformed_tool_arguments_strike() -> None:
    tap = run("openai", openai_tool_stream('{"path": "src/app.py", "sta', '{"ok": true}'))
    assert tap.malformed_tool_json and tap.signals() == ("malformed_tool_json",)


def test_non_object_tool_arguments_are_malformed() -> None:
    assert run("openai", openai_tool_stream('["a"]', "{}")).malformed_tool_json


def test_openai_empty_answer() -> None:
    tap = run(
        "openai",
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "  "}),
            chunk({}, "stop"),
            DONE,
        ],
    )
    assert tap.empty_answer and tap.signals() == ("empty_answer",)


def test_openai_refusal_delta() -> None:
    tap = run(
        "openai",
        [
            chunk({"role": "assistant", "content": None, "refusal": ""}),
            chunk({"refusal": "I can't help with that."}),
            chunk({}, "stop"),
            DONE,
        ],
    )
    assert tap.refusal and "refusal" in tap.signals()


@pytest.mark.parametrize(
    ("max_tokens", "truncated"), [(1024, True), (4096, True), (1023, False), (None, False)]
)
def test_truncation_needs_max_tokens_of_at_least_1024(
    max_tokens: int | None, truncated: bool
) -> None:
    tap = run("openai", openai_text_stream("length"), max_tokens)
    assert tap.truncated is truncated
    assert ("truncated" in tap.signals()) is truncated


def test_openai_in_stream_error_is_an_error_finish_without_signals() -> None:
    err = oai(
        {
            "error": {
                "message": "upstream overloaded",
                "type": "server_error",
                "param": None,
                "code": None,
            }
        }
    )
    tap = run("openai", [chunk({"role": "assistant", "content": ""}), err])
    assert tap.error_finish and tap.error_message == "upstream overloaded"
    assert not tap.billed_success and tap.signals() == ()


def test_openai_finish_reason_error_is_an_error_finish() -> None:
    tap = run("openai", openai_text_stream("error"))
    assert tap.completed and tap.error_finish and not tap.billed_success


def test_stream_without_a_clean_end_is_not_completed() -> None:
    tap = run("openai", openai_text_stream()[:-1])
    assert not tap.completed and tap.usage is not None and tap.signals() == ()


def test_spaced_json_from_other_openai_compatible_servers() -> None:
    spaced = [
        b'data: {"id": "x", "choices": [{"index": 0, "delta": {"content": "hi"}, '
        b'"finish_reason": null}]}\n\n',
        b'data: {"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], '
        b'"usage": {"prompt_tokens": 12, "completion_tokens": 2, '
        b'"prompt_cache_hit_tokens": 8}}\n\n',
        DONE,
    ]
    tap = run("openai", spaced)
    assert tap.finish_reason == "stop" and tap.has_text
    assert tap.usage == Usage(
        prompt_tokens=12, cached_tokens=8, cache_write_tokens=0, output_tokens=2
    )


def test_markers_inside_answer_text_are_not_mistaken_for_fields() -> None:
    text = 'set "finish_reason": "length" and "usage": {"prompt_tokens": 9} "refusal": "x"'
    tap = run(
        "openai",
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": text}),
            chunk({"content": text}),
            chunk({}, "stop"),
            DONE,
        ],
    )
    assert tap.finish_reason == "stop" and tap.usage is None and not tap.refusal


def test_text_chunks_after_the_first_text_are_not_parsed() -> None:
    broken = b'data: {"choices":[{"index":0,"delta":{"content":"more\n\n'  # not JSON, no marker
    tap = run("openai", [chunk({"content": "first"}), broken, chunk({}, "stop"), DONE])
    assert tap.bad_events == 0 and tap.completed


# --- Anthropic streams ----------------------------------------------------------------------------


def test_anthropic_stream_usage_is_normalised() -> None:
    tap = run("anthropic", anthropic_stream())
    assert tap.usage == Usage(
        prompt_tokens=1250, cached_tokens=1000, cache_write_tokens=200, output_tokens=89
    )
    assert tap.finish_reason == "tool_use" and tap.completed and tap.billed_success


def test_anthropic_tool_input_json_accumulates_per_block() -> None:
    tap = run("anthropic", anthropic_stream(tool_json='{"path": "ü/ä.py", "n": [1, 2]}'))
    assert tap.tool_arguments() == {2: '{"path": "ü/ä.py", "n": [1, 2]}'}
    assert tap.has_text and tap.has_tool_call and tap.signals() == ()


def test_anthropic_malformed_tool_input_strikes() -> None:
    tap = run("anthropic", anthropic_stream(tool_json='{"path": "a.py", "n": '))
    assert tap.signals() == ("malformed_tool_json",)


def test_anthropic_tool_without_input_deltas_is_not_malformed() -> None:
    chunks = [c for c in anthropic_stream() if b"input_json_delta" not in c]
    assert not run("anthropic", chunks).malformed_tool_json


def test_anthropic_refusal_and_truncation_stop_reasons() -> None:
    assert run("anthropic", anthropic_stream(stop="refusal")).signals() == ("refusal",)
    assert run("anthropic", anthropic_stream(stop="max_tokens"), 8192).signals() == ("truncated",)
    assert run("anthropic", anthropic_stream(stop="max_tokens"), 512).signals() == ()


def test_anthropic_thinking_only_answer_is_empty() -> None:
    chunks = anthropic_stream()
    kept = chunks[:5] + chunks[-2:]  # message_start, the thinking block, message_delta, stop
    tap = run("anthropic", kept)
    assert tap.completed and tap.empty_answer and "empty_answer" in tap.signals()


def test_anthropic_error_event_mid_stream() -> None:
    overloaded = {"type": "overloaded_error", "message": "Overloaded"}
    chunks = [*anthropic_stream()[:8], ant("error", {"type": "error", "error": overloaded})]
    tap = run("anthropic", chunks)
    assert tap.error_finish and not tap.completed and tap.error_message == "Overloaded"
    assert tap.usage is not None and tap.usage.prompt_tokens == 1250  # partial usage kept


def test_anthropic_stream_without_message_stop_is_not_completed() -> None:
    tap = run("anthropic", anthropic_stream(end=False))
    assert not tap.completed and tap.finish_reason == "tool_use" and tap.signals() == ()


def test_anthropic_cumulative_message_delta_usage_overrides_the_start() -> None:
    chunks = anthropic_stream()
    chunks[-2] = ant(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"input_tokens": 60, "cache_read_input_tokens": 1000, "output_tokens": 120},
        },
    )
    tap = run("anthropic", chunks)
    assert tap.usage == Usage(
        prompt_tokens=1260, cached_tokens=1000, cache_write_tokens=200, output_tokens=120
    )


def test_events_without_event_lines_are_dispatched_by_type() -> None:
    chunks = [c.split(b"\n", 1)[1] for c in anthropic_stream()]  # drop every "event:" line
    assert summary(run("anthropic", chunks)) == summary(run("anthropic", anthropic_stream()))


# --- JSON bodies ----------------------------------------------------------------------------------


def body_tap(api: str, obj: Any, max_tokens: int | None = None) -> ResponseTap:
    tap = ResponseTap(api, False, max_tokens)  # type: ignore[arg-type]
    tap.feed_body(obj if isinstance(obj, bytes) else orjson.dumps(obj))
    return tap


def test_openai_body_with_tool_calls_and_cache() -> None:
    tap = body_tap(
        "openai",
        {
            "id": "c",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": None,
                        "tool_calls": [
                            {
                                "id": "t",
                                "type": "function",
                                "function": {"name": "f", "arguments": '{"a": 1}'},
                            }
                        ],
                    },
                }
            ],
            "usage": {
                "prompt_tokens": 100,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 64},
            },
        },
    )
    assert tap.completed and tap.billed_success and tap.signals() == ()
    assert tap.usage == Usage(100, 64, 0, 5) and tap.tool_arguments() == {0: '{"a": 1}'}


def test_openai_body_malformed_arguments_and_refusal() -> None:
    tap = body_tap(
        "openai",
        {
            "choices": [
                {
                    "finish_reason": "stop",
                    "message": {
                        "content": None,
                        "refusal": "No.",
                        "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}],
                    },
                }
            ]
        },
    )
    assert set(tap.signals()) == {"malformed_tool_json", "refusal"}


def test_openai_body_empty_and_truncated() -> None:
    tap = body_tap(
        "openai", {"choices": [{"finish_reason": "length", "message": {"content": ""}}]}, 2048
    )
    assert tap.signals() == ("empty_answer", "truncated")


def test_error_bodies_with_status_200_are_error_finishes() -> None:
    assert body_tap("openai", {"error": {"message": "provider died", "code": 502}}).error_finish
    assert body_tap(
        "anthropic", {"type": "error", "error": {"type": "api_error", "message": "x"}}
    ).error_finish


def test_anthropic_body_usage_and_finish() -> None:
    tap = body_tap(
        "anthropic",
        {
            "type": "message",
            "content": [{"type": "text", "text": "Done."}],
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": 10,
                "cache_read_input_tokens": 500,
                "cache_creation_input_tokens": 0,
                "output_tokens": 7,
            },
        },
    )
    assert tap.usage == Usage(510, 500, 0, 7) and tap.billed_success and tap.signals() == ()


def test_body_that_is_not_json_is_counted_not_raised() -> None:
    tap = body_tap("openai", b"<html>bad gateway</html>")
    assert tap.bad_events == 1 and not tap.completed and tap.usage is None
