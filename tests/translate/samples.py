"""Realistic bodies of each format: requests with a tool round trip (parallel calls) and an
image, JSON answers and SSE streams, as the providers and agents send them."""

from __future__ import annotations

from typing import Any

import orjson

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

TOOL_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
}


def anthropic_request(stream: bool = False) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": [
            {
                "type": "text",
                "text": "You are a coding agent.",
                "cache_control": {"type": "ephemeral"},
            }
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Read a.py and b.py, and look at this."},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Reading both."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01A",
                        "name": "read",
                        "input": {"path": "a.py"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_01B",
                        "name": "read",
                        "input": {"path": "b.py"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "print(1)"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01B",
                        "content": [{"type": "text", "text": "print(2)"}],
                        "is_error": False,
                    },
                    {"type": "text", "text": "Now explain."},
                ],
            },
        ],
        "tools": [{"name": "read", "description": "Read a file", "input_schema": TOOL_SCHEMA}],
        "tool_choice": {"type": "auto"},
        "temperature": 0.5,
        "stream": stream,
    }


def openai_request(stream: bool = False) -> dict[str, Any]:
    return {
        "model": "gpt-4.1",
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Read a.py and b.py, and look at this."},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                ],
            },
            {
                "role": "assistant",
                "content": "Reading both.",
                "tool_calls": [
                    {
                        "id": "call_A",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path":"a.py"}'},
                    },
                    {
                        "id": "call_B",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path":"b.py"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_A", "content": "print(1)"},
            {"role": "tool", "tool_call_id": "call_B", "content": "print(2)"},
            {"role": "user", "content": "Now explain."},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read",
                    "description": "Read a file",
                    "parameters": TOOL_SCHEMA,
                },
            }
        ],
        "tool_choice": "auto",
        "temperature": 0.5,
        "max_tokens": 4096,
        "stream": stream,
    }


def responses_request(stream: bool = False) -> dict[str, Any]:
    return {
        "model": "gpt-5-codex",
        "instructions": "You are a coding agent.",
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "Sandbox: workspace-write."}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Read a.py and b.py, and look at this."},
                    {
                        "type": "input_image",
                        "image_url": f"data:image/png;base64,{PNG}",
                        "detail": "auto",
                    },
                ],
            },
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Need both files."}],
                "encrypted_content": "gAAAAenc1",
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Reading both."}],
            },
            {
                "type": "function_call",
                "call_id": "call_A",
                "name": "read",
                "arguments": '{"path":"a.py"}',
            },
            {
                "type": "function_call",
                "call_id": "call_B",
                "name": "read",
                "arguments": '{"path":"b.py"}',
            },
            {"type": "function_call_output", "call_id": "call_A", "output": "print(1)"},
            {"type": "function_call_output", "call_id": "call_B", "output": "print(2)"},
            {
                "type": "custom_tool_call",
                "call_id": "call_C",
                "name": "apply_patch",
                "input": "*** Begin Patch\n*** End Patch",
            },
            {"type": "custom_tool_call_output", "call_id": "call_C", "output": "Done."},
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Now explain."}],
            },
        ],
        "tools": [
            {
                "type": "function",
                "name": "read",
                "description": "Read a file",
                "parameters": TOOL_SCHEMA,
                "strict": False,
            },
            {
                "type": "custom",
                "name": "apply_patch",
                "description": "Apply a patch",
                "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
            },
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "sess-1",
        "stream": stream,
    }


REQUESTS = {
    "anthropic": anthropic_request,
    "openai": openai_request,
    "responses": responses_request,
}


# --- answers -----------------------------------------------------------------------------

ANTHROPIC_RESPONSE = {
    "id": "msg_01XYZ",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "thinking", "thinking": "Two reads.", "signature": "sigABC"},
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "toolu_01A", "name": "read", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "toolu_01B", "name": "read", "input": {"path": "b.py"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 100,
        "cache_creation_input_tokens": 20,
        "cache_read_input_tokens": 880,
        "output_tokens": 50,
    },
}
OPENAI_RESPONSE = {
    "id": "chatcmpl-XYZ",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "deepseek-chat",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "Reading.",
                "reasoning_content": "Two reads.",
                "tool_calls": [
                    {
                        "id": "call_A",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path":"a.py"}'},
                    },
                    {
                        "id": "call_B",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path":"b.py"}'},
                    },
                ],
            },
        }
    ],
    "usage": {
        "prompt_tokens": 1000,
        "completion_tokens": 50,
        "total_tokens": 1050,
        "prompt_tokens_details": {"cached_tokens": 880},
    },
}
RESPONSES_RESPONSE = {
    "id": "resp_XYZ",
    "object": "response",
    "created_at": 1700000000,
    "status": "completed",
    "model": "gpt-5-codex",
    "output": [
        {
            "id": "rs_1",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Two reads."}],
            "encrypted_content": "gAAAAenc",
        },
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Reading.", "annotations": []}],
        },
        {
            "id": "fc_1",
            "type": "function_call",
            "call_id": "call_A",
            "name": "read",
            "arguments": '{"path":"a.py"}',
            "status": "completed",
        },
        {
            "id": "fc_2",
            "type": "function_call",
            "call_id": "call_B",
            "name": "read",
            "arguments": '{"path":"b.py"}',
            "status": "completed",
        },
    ],
    "usage": {
        "input_tokens": 1000,
        "input_tokens_details": {"cached_tokens": 880},
        "output_tokens": 50,
        "output_tokens_details": {"reasoning_tokens": 10},
        "total_tokens": 1050,
    },
}
RESPONSES = {
    "anthropic": ANTHROPIC_RESPONSE,
    "openai": OPENAI_RESPONSE,
    "responses": RESPONSES_RESPONSE,
}


def _sse(name: str | None, obj: Any) -> bytes:
    data = obj if isinstance(obj, bytes) else orjson.dumps(obj)
    head = b"event: " + name.encode() + b"\n" if name else b""
    return head + b"data: " + data + b"\n\n"


def anthropic_stream() -> bytes:
    ev: list[tuple[str, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_01XYZ",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [],
                    "stop_reason": None,
                    "usage": {
                        "input_tokens": 100,
                        "cache_read_input_tokens": 880,
                        "cache_creation_input_tokens": 20,
                        "output_tokens": 1,
                    },
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Two reads."},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "sigABC"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("ping", {"type": "ping"}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "Read"},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": "ing. ünïcödé"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
    ]
    for i, (cid, path) in enumerate((("toolu_01A", "a.py"), ("toolu_01B", "b.py")), start=2):
        ev += [
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "tool_use", "id": cid, "name": "read", "input": {}},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": '{"path":'},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": f'"{path}"}}'},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": i}),
        ]
    ev += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 50},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(_sse(n, o) for n, o in ev)


def openai_stream() -> bytes:
    head = {
        "id": "chatcmpl-XYZ",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "deepseek-chat",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        )

    out = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": "Two "}),
        chunk({"reasoning_content": "reads."}),
        chunk({"content": "Read"}),
        chunk({"content": "ing. ünïcödé"}),
    ]
    for k, (cid, path) in enumerate((("call_A", "a.py"), ("call_B", "b.py"))):
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": k,
                            "id": cid,
                            "type": "function",
                            "function": {"name": "read", "arguments": ""},
                        }
                    ]
                }
            )
        )
        out.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": '{"path":'}}]}))
        out.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": f'"{path}"}}'}}]}))
    out.append(chunk({}, "tool_calls"))
    out.append(_sse(None, {**head, "choices": [], "usage": OPENAI_RESPONSE["usage"]}))
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def responses_stream() -> bytes:
    from orca_cli.translate.model import (
        BlockEnd,
        End,
        ReasoningDelta,
        Start,
        Stop,
        TextDelta,
        ToolDelta,
        ToolStart,
        Usage,
        UsageEvent,
    )
    from orca_cli.translate.responses_stream import ResponsesStreamEncoder

    # Built with our encoder, then checked event-by-event against the SDK's types in tests.
    enc = ResponsesStreamEncoder("gpt-5-codex", "resp_XYZ", "openai", "gpt-5-codex", 1700000000)
    events = [
        Start("resp_XYZ", "gpt-5-codex"),
        ReasoningDelta(0, "Two reads."),
        ReasoningDelta(0, encrypted="gAAAAenc"),
        BlockEnd(0),
        TextDelta(1, "Read"),
        TextDelta(1, "ing. ünïcödé"),
        BlockEnd(1),
    ]
    for i, (cid, path) in enumerate((("call_A", "a.py"), ("call_B", "b.py")), start=2):
        events += [
            ToolStart(i, cid, "read"),
            ToolDelta(i, '{"path":'),
            ToolDelta(i, f'"{path}"}}'),
            BlockEnd(i),
        ]
    events += [UsageEvent(Usage(1000, 50, 880, 0, 10)), Stop("tool_use"), End()]
    return enc.encode_all(events)


STREAMS = {"anthropic": anthropic_stream, "openai": openai_stream, "responses": responses_stream}
