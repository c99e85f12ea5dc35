"""What a translated answer says about itself: its time (the upstream's own, else the one the
caller passes in; the codecs read no clock), and the error event that ends a stream early,
which continues the stream the client was sent (`ResponseTranslator.fail`, SPEC §7)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from orca_cli.translate import ResponseTranslator
from orca_cli.types import Api
from tests.translate.samples import RESPONSES, STREAMS
from tests.translate.sdk import check_stream

FAMILY = {"anthropic": "anthropic", "openai": "deepseek", "responses": "openai"}
NOW = 1_786_000_123  # the caller's clock
UPSTREAM = 1_700_000_000  # what the sample Chat Completions and Responses answers say


def _translator(up: Api, inbound: Api) -> ResponseTranslator:
    return ResponseTranslator(up, inbound, "m", upstream_model="u", upstream_family=FAMILY[up],
                              created=NOW)


def _events(raw: bytes, n: int) -> bytes:
    """The first `n` SSE events of `raw`."""
    return b"".join(e + b"\n\n" for e in raw.split(b"\n\n")[:n])


def _responses(raw: bytes) -> list[dict[str, Any]]:
    return [obj for _, obj in check_stream("responses", raw)]


# --- the answer's time ----------------------------------------------------------------------


@pytest.mark.parametrize("inbound", ["openai", "responses"])
def test_a_messages_answer_gets_the_callers_time(inbound: Api) -> None:
    rt = _translator("anthropic", inbound)
    body = orjson.loads(rt.translate_body(orjson.dumps(RESPONSES["anthropic"])))
    assert body["created" if inbound == "openai" else "created_at"] == NOW


def test_a_messages_stream_gets_the_callers_time_in_every_chunk() -> None:
    rt = _translator("anthropic", "openai")
    chunks = check_stream("openai", rt.feed(STREAMS["anthropic"]()) + rt.close())
    assert {obj["created"] for _, obj in chunks if obj != "[DONE]"} == {NOW}
    rt = _translator("anthropic", "responses")
    events = _responses(rt.feed(STREAMS["anthropic"]()) + rt.close())
    assert {e["response"]["created_at"] for e in events if "response" in e} == {NOW}


@pytest.mark.parametrize(("up", "inbound"), [("openai", "responses"), ("responses", "openai")])
def test_an_upstreams_own_time_wins(up: Api, inbound: Api) -> None:
    key = "created" if inbound == "openai" else "created_at"
    body = orjson.loads(_translator(up, inbound).translate_body(orjson.dumps(RESPONSES[up])))
    assert body[key] == UPSTREAM
    rt = _translator(up, inbound)
    objs = [obj for _, obj in check_stream(inbound, rt.feed(STREAMS[up]()) + rt.close())]
    if inbound == "responses":
        objs = [o["response"] for o in objs if "response" in o]
    assert {o[key] for o in objs if isinstance(o, dict)} == {UPSTREAM}


# --- a stream that breaks -------------------------------------------------------------------


@pytest.mark.parametrize("up", ["openai", "anthropic"])
@pytest.mark.parametrize("sent", [1, 3, 6])
def test_a_failure_continues_the_responses_stream_it_ends(up: Api, sent: int) -> None:
    """Broken off after `sent` upstream events: the `response.failed` names the response the
    stream announced (id, model, created_at) and takes the next sequence number."""
    rt = _translator(up, "responses")
    raw = rt.feed(_events(STREAMS[up](), sent)) + rt.fail("upstream stream failed: reset")
    events = _responses(raw)
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.failed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    announced, failed = events[0]["response"], events[-1]["response"]
    for key in ("id", "model", "created_at"):
        assert failed[key] == announced[key], key
    assert failed["error"]["message"] == "upstream stream failed: reset"
    assert rt.error == "upstream stream failed: reset"
    assert rt.close() == b"", "nothing more is owed after the failure"


def test_a_failure_before_any_event_is_one_whole_response() -> None:
    """The upstream sent no complete event yet: the client still sees one response, created
    and failed, with the caller's time."""
    events = _responses(_translator("openai", "responses").fail("gone"))
    assert [e["type"] for e in events] == ["response.created", "response.in_progress",
                                           "response.failed"]
    assert len({e["response"]["id"] for e in events}) == 1
    assert {e["response"]["created_at"] for e in events} == {NOW}


def test_a_failure_after_the_stream_ended_adds_nothing() -> None:
    rt = _translator("openai", "responses")
    done = rt.feed(STREAMS["openai"]()) + rt.close()
    assert _responses(done)[-1]["type"] == "response.completed"
    assert rt.fail("too late") == b"" and rt.error is None


@pytest.mark.parametrize(("inbound", "last"), [("openai", "error"), ("anthropic", "error")])
def test_a_failure_is_the_inbound_formats_error_event(inbound: Api, last: str) -> None:
    rt = _translator("responses" if inbound == "openai" else "openai", inbound)
    raw = rt.feed(_events(STREAMS["responses" if inbound == "openai" else "openai"](), 4))
    events = check_stream(inbound, raw + rt.fail("upstream stream failed: reset"))
    name, obj = events[-1]
    if inbound == "anthropic":
        assert name == "error" and obj["error"]["message"] == "upstream stream failed: reset"
    else:
        assert obj["error"]["message"] == "upstream stream failed: reset"
