"""Streams: provenance survives a streamed answer, and any chunking gives the same bytes."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from orca_cli.translate import ResponseTranslator, TranslationOptions, translate_request
from orca_cli.types import APIS
from orca_cli.wire.sse import SSEDecoder
from tests.translate.samples import STREAMS, anthropic_request, responses_request
from tests.translate.sdk import check_request, check_stream

FAMILY = {"anthropic": "anthropic", "openai": "deepseek", "responses": "openai"}


def _anthropic_content(events: list[tuple[str | None, Any]]) -> list[dict[str, Any]]:
    """Rebuild the message content a client assembles from the stream (as the SDK does)."""
    blocks: list[dict[str, Any]] = []
    for _, obj in events:
        if obj["type"] == "content_block_start":
            blocks.append(dict(obj["content_block"]))
        elif obj["type"] == "content_block_delta":
            d, b = obj["delta"], blocks[obj["index"]]
            if d["type"] == "text_delta":
                b["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                b["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                b["signature"] = d["signature"]
            elif d["type"] == "input_json_delta":
                b["_json"] = b.get("_json", "") + d["partial_json"]
    for b in blocks:
        if "_json" in b:
            b["input"] = orjson.loads(b.pop("_json"))
    return blocks


def test_streamed_deepseek_reasoning_returns_only_to_deepseek() -> None:
    rt = ResponseTranslator(
        "openai",
        "anthropic",
        "claude-sonnet-4-5",
        upstream_model="deepseek-chat",
        upstream_family="deepseek",
    )
    events = check_stream("anthropic", rt.feed(STREAMS["openai"]()) + rt.close())
    content = _anthropic_content(events)
    assert content[0]["type"] == "thinking" and content[0]["thinking"] == "Two reads."
    assert content[0]["signature"].startswith("orca1.")
    body = anthropic_request()
    body["messages"] = [
        body["messages"][0],
        {"role": "assistant", "content": content},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": b["id"], "content": "ok"}
                for b in content
                if b["type"] == "tool_use"
            ],
        },
    ]
    opts = TranslationOptions()
    same = translate_request(
        body,
        "anthropic",
        "openai",
        model="deepseek-chat",
        target_model_family="deepseek",
        options=opts,
    )
    sent = check_request("openai", same.body)
    assert sent["messages"][2]["reasoning_content"] == "Two reads."
    assert [c["id"] for c in sent["messages"][2]["tool_calls"]] == ["call_A", "call_B"]
    other = translate_request(
        body, "anthropic", "responses", model="gpt-5", target_model_family="openai", options=opts
    )
    assert b"Two reads." not in other.body and other.report["dropped_reasoning"] == 1


def test_streamed_claude_thinking_returns_to_claude_through_codex() -> None:
    rt = ResponseTranslator(
        "anthropic",
        "responses",
        "gpt-5-codex",
        upstream_model="claude-sonnet-4-5",
        upstream_family="anthropic",
    )
    events = check_stream("responses", rt.feed(STREAMS["anthropic"]()) + rt.close())
    done = events[-1][1]["response"]["output"]
    reasoning = next(i for i in done if i["type"] == "reasoning")
    assert reasoning["summary"][0]["text"] == "Two reads."
    body = responses_request()
    history = [{k: v for k, v in i.items() if k not in ("id", "status")} for i in done]
    body["input"] = (
        body["input"][:2]
        + history
        + [
            {"type": "function_call_output", "call_id": c["call_id"], "output": "ok"}
            for c in done
            if c["type"] == "function_call"
        ]
    )
    out = translate_request(
        body,
        "responses",
        "anthropic",
        model="claude-sonnet-4-5",
        target_model_family="anthropic",
        options=TranslationOptions(),
    )
    sent = check_request("anthropic", out.body)
    thinking = [b for m in sent["messages"] for b in m["content"] if b["type"] == "thinking"]
    assert thinking == [{"type": "thinking", "thinking": "Two reads.", "signature": "sigABC"}]


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from([(s, d) for s in APIS for d in APIS if s != d]),
    st.lists(st.integers(1, 4000), max_size=30),
)
def test_any_chunking_gives_the_same_bytes(pair: tuple[str, str], cuts: list[int]) -> None:
    up, inbound = pair
    raw = STREAMS[up]()
    points = sorted({c % len(raw) for c in cuts} - {0})
    pieces = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]

    def run(chunks: list[bytes]) -> bytes:
        rt = ResponseTranslator(
            up,
            inbound,
            "m",
            upstream_model="u",  # type: ignore[arg-type]
            upstream_family=FAMILY[up],
        )
        return b"".join(rt.feed(c) for c in chunks) + rt.close()

    assert run(pieces) == run([raw])


@settings(max_examples=20, deadline=None)
@given(
    st.sampled_from([(s, d) for s in APIS for d in APIS if s != d]),
    st.lists(st.integers(1, 4000), max_size=30),
)
def test_pairs_framed_by_the_relay_give_the_same_bytes(pair: tuple[str, str],
                                                       cuts: list[int]) -> None:
    """The relay frames SSE once for its tap and the translator (`feed_pairs`)."""
    up, inbound = pair
    raw = STREAMS[up]()
    points = sorted({c % len(raw) for c in cuts} - {0})
    pieces = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]

    def translator() -> ResponseTranslator:
        return ResponseTranslator(up, inbound, "m", upstream_model="u",  # type: ignore[arg-type]
                                  upstream_family=FAMILY[up])

    fed, framed, frames = translator(), translator(), SSEDecoder()
    by_chunk = b"".join(fed.feed(c) for c in pieces) + fed.close()
    by_pairs = b"".join(framed.feed_pairs(frames.feed_pairs(c)) for c in pieces) + framed.close()
    assert by_pairs == by_chunk
    assert (framed.usage, framed.stop, framed.error) == (fed.usage, fed.stop, fed.error)
