"""Every cross direction: JSON request, JSON answer and stream, checked against the official
SDKs' types and for what each carries across (tool round trip with parallel calls, image)."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from orca_cli.translate import ResponseTranslator, TranslationOptions, translate_request
from orca_cli.types import APIS, Api
from tests.translate.samples import PNG, REQUESTS, RESPONSES, STREAMS
from tests.translate.sdk import check_request, check_response, check_stream

FAMILY = {"anthropic": "anthropic", "openai": "openai", "responses": "openai"}
PAIRS = [(s, d) for s in APIS for d in APIS if s != d]
OPTS = TranslationOptions()


def _ids(pair: tuple[str, str]) -> str:
    return f"{pair[0]}->{pair[1]}"


def _translate(src: Api, dst: Api, stream: bool = False) -> dict[str, Any]:
    out = translate_request(
        REQUESTS[src](stream),
        src,
        dst,
        model="target-model",
        target_model_family=FAMILY[dst],
        options=OPTS,
    )
    assert out.report["untranslatable"] == []
    assert out.report["from"] == src and out.report["to"] == dst
    return check_request(dst, out.body)


def _calls(dst: str, body: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """(id, name, arguments as an object) of every tool call in a request body."""
    found: list[tuple[str, str, Any]] = []
    if dst == "anthropic":
        for m in body["messages"]:
            for b in m["content"]:
                if b["type"] == "tool_use":
                    found.append((b["id"], b["name"], b["input"]))
    elif dst == "openai":
        for m in body["messages"]:
            for c in m.get("tool_calls") or ():
                found.append(
                    (c["id"], c["function"]["name"], orjson.loads(c["function"]["arguments"]))
                )
    else:
        for item in body["input"]:
            if item["type"] == "function_call":
                found.append((item["call_id"], item["name"], orjson.loads(item["arguments"])))
    return found


def _results(dst: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if dst == "anthropic":
        for m in body["messages"]:
            for b in m["content"]:
                if b["type"] == "tool_result":
                    found.append((b["tool_use_id"], b["content"][0]["text"]))
    elif dst == "openai":
        found = [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]
    else:
        found = [
            (i["call_id"], i["output"])
            for i in body["input"]
            if i["type"] == "function_call_output"
        ]
    return found


def _images(dst: str, body: bytes) -> int:
    return body.count(PNG.encode())


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_request_tool_round_trip_and_image(pair: tuple[Api, Api]) -> None:
    src, dst = pair
    body = _translate(src, dst)
    src_body = REQUESTS[src]()  # as the agent sends it (Codex history is not SDK-typed)
    calls = _calls(dst, body)
    # The parallel pair of reads keeps ids, names and arguments.
    assert calls[:2] == _calls(src, src_body)[:2]
    assert [c[2] for c in calls[:2]] == [{"path": "a.py"}, {"path": "b.py"}]
    results = _results(dst, body)
    assert results[:2] == [(calls[0][0], "print(1)"), (calls[1][0], "print(2)")]
    assert _images(dst, orjson.dumps(body)) == 1
    assert body["model"] == "target-model"


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_request_carries_system_sampling_and_choice(pair: tuple[Api, Api]) -> None:
    src, dst = pair
    body = _translate(src, dst)
    text = orjson.dumps(body).decode()
    assert "You are a coding agent." in text
    assert "Now explain." in text
    if dst == "anthropic":
        assert body["tool_choice"] == {"type": "auto"}
        assert body["system"][0]["text"] == "You are a coding agent."
        marks = text.count("cache_control")
        assert 1 <= marks <= 4
    else:
        assert "cache_control" not in text
        assert body["tool_choice"] == "auto"
    if dst == "openai":
        assert body["messages"][0] == {"role": "system", "content": "You are a coding agent."}


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_json_answer(pair: tuple[Api, Api]) -> None:
    inbound, upstream = pair
    rt = ResponseTranslator(
        upstream,
        inbound,
        "client-model",
        upstream_model="up-model",
        upstream_family=FAMILY[upstream],
    )
    out = check_response(inbound, rt.translate_body(orjson.dumps(RESPONSES[upstream])))
    assert out["model"] == "client-model"
    assert rt.stop == "tool_use"
    assert rt.usage.input == 1000 and rt.usage.cached == 880 and rt.usage.output == 50
    text = orjson.dumps(out).decode()
    assert "Reading." in text and "a.py" in text and "b.py" in text
    if inbound == "anthropic":
        assert out["id"].startswith("msg_") and out["stop_reason"] == "tool_use"
        assert out["usage"]["cache_read_input_tokens"] == 880
        assert (
            out["usage"]["input_tokens"] + 880 + out["usage"]["cache_creation_input_tokens"] == 1000
        )
        assert [b["type"] for b in out["content"]][-2:] == ["tool_use", "tool_use"]
    elif inbound == "openai":
        assert out["id"].startswith("chatcmpl-")
        assert out["choices"][0]["finish_reason"] == "tool_calls"
        assert len(out["choices"][0]["message"]["tool_calls"]) == 2
        assert out["usage"]["prompt_tokens_details"]["cached_tokens"] == 880
    else:
        assert out["id"].startswith("resp_") and out["status"] == "completed"
        assert [i["type"] for i in out["output"]][-2:] == ["function_call", "function_call"]
        assert out["usage"]["input_tokens_details"]["cached_tokens"] == 880


def _chunked(raw: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(raw)), 40))
    return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]


def _stream_text(inbound: str, events: list[tuple[str | None, Any]]) -> str:
    parts: list[str] = []
    for _, obj in events:
        if inbound == "anthropic" and obj["type"] == "content_block_delta":
            parts.append(obj["delta"].get("text") or obj["delta"].get("partial_json") or "")
        elif inbound == "openai" and obj != "[DONE]":
            for ch in obj["choices"]:
                d = ch["delta"]
                parts.append(d.get("content") or "")
                for call in d.get("tool_calls") or ():
                    parts.append(call["function"].get("arguments") or "")
        elif inbound == "responses" and obj["type"] in (
            "response.output_text.delta",
            "response.function_call_arguments.delta",
        ):
            parts.append(obj["delta"])
    return "".join(parts)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_stream_any_chunking(pair: tuple[Api, Api], seed: int) -> None:
    inbound, upstream = pair
    rt = ResponseTranslator(
        upstream,
        inbound,
        "client-model",
        upstream_model="up-model",
        upstream_family=FAMILY[upstream],
    )
    raw = STREAMS[upstream]()
    out = b"".join(rt.feed(c) for c in _chunked(raw, seed)) + rt.close()
    whole = ResponseTranslator(
        upstream,
        inbound,
        "client-model",
        upstream_model="up-model",
        upstream_family=FAMILY[upstream],
    )
    assert out == whole.feed(raw) + whole.close()  # chunk boundaries change nothing
    events = check_stream(inbound, out)
    assert _stream_text(inbound, events) == 'Reading. ünïcödé{"path":"a.py"}{"path":"b.py"}'
    assert rt.stop == "tool_use" and rt.usage.cached == 880
    last = events[-1][1]
    if inbound == "anthropic":
        assert last["type"] == "message_stop"
        delta = events[-2][1]
        assert delta["delta"]["stop_reason"] == "tool_use"
        assert delta["usage"]["cache_read_input_tokens"] == 880
    elif inbound == "openai":
        assert last == "[DONE]"
        assert events[-3][1]["choices"][0]["finish_reason"] == "tool_calls"
        assert events[-2][1]["usage"]["prompt_tokens"] == 1000
    else:
        assert last["type"] == "response.completed"
        calls = [i for i in last["response"]["output"] if i["type"] == "function_call"]
        assert [c["arguments"] for c in calls] == ['{"path":"a.py"}', '{"path":"b.py"}']
        seqs = [obj["sequence_number"] for _, obj in events]
        assert seqs == list(range(len(seqs)))


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_mid_stream_failure_becomes_error_event(pair: tuple[Api, Api]) -> None:
    inbound, upstream = pair
    raw = STREAMS[upstream]()
    rt = ResponseTranslator(
        upstream, inbound, "m", upstream_model="u", upstream_family=FAMILY[upstream]
    )
    out = rt.feed(raw[: len(raw) // 2]) + rt.close()
    events = check_stream(inbound, out)
    last = events[-1][1]
    if inbound == "anthropic":
        assert events[-1][0] == "error" and last["error"]["type"] == "api_error"
        assert not any(obj["type"] == "message_stop" for _, obj in events)
    elif inbound == "openai":
        assert "error" in last and all(obj != "[DONE]" for _, obj in events)
    else:
        assert last["type"] == "response.failed"
        assert not any(obj["type"] == "response.completed" for _, obj in events)


@pytest.mark.parametrize("upstream", APIS)
def test_upstream_error_event_mid_stream(upstream: Api) -> None:
    err = {
        "anthropic": b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
        b'"message":"Overloaded"}}\n\n',
        "openai": b'data: {"error":{"message":"Overloaded","type":"server_error"}}\n\n',
        "responses": b'event: response.failed\ndata: {"type":"response.failed","response":'
        b'{"error":{"code":"server_error","message":"Overloaded"}}}\n\n',
    }[upstream]
    raw = STREAMS[upstream]()
    head = raw[: raw.index(b"\n\n", len(raw) // 3) + 2]
    for inbound in APIS:
        if inbound == upstream:
            continue
        rt = ResponseTranslator(
            upstream, inbound, "m", upstream_model="u", upstream_family=FAMILY[upstream]
        )
        out = rt.feed(head) + rt.feed(err) + rt.feed(b"data: [DONE]\n\n") + rt.close()
        assert b"Overloaded" in out
        events = check_stream(inbound, out)
        assert events[-1][1] != "[DONE]"
