"""Bad input, fuzzed (SPEC §1.2, §11; RELIABILITY.md S28, S31): malformed and adversarial
bodies of both wire formats, sent over HTTP to a real sidecar whose upstreams are `sim`.

Whatever arrives, orca answers a 2xx or a 4xx in the inbound API's own error shape — never a
5xx of its own but the documented 503 for "nothing could be attempted" — and a refusal leaves
no state behind (tier documents, pins and counters; its trace is still written). A body over
`max_body_mb` is refused with 413 before it is read whole.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orca_cli.config.load import loads
from orca_cli.proxy.sim import SimTransport
from orca_cli.testing import Sidecar, sidecar
from tests.reliability.configs import SIM_CODING_ROUTERS, sim_channels
from tests.reliability.probes import state_keys

pytestmark = pytest.mark.asyncio

CONFIG = f"""
[server]
max_body_mb = 1
header_timeout_s = 5

{sim_channels(o_keys=2, o_models=("small-o", "big-o"), a_models=("small-a", "big-a"))}
[models.small-o]
context_window = 2000000
[models.small-a]
context_window = 2000000
{SIM_CODING_ROUTERS.format(escalation="")}
[aliases]
"claude-*" = "orca/coding"
"""

LIMIT = 1024 * 1024
PATHS = ("/v1/chat/completions", "/v1/messages")
SETTINGS = settings(max_examples=150, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture
async def sc() -> AsyncIterator[Sidecar]:
    async with sidecar(loads(CONFIG, source="fuzz")) as s:
        yield s


def sim_calls(sc: Sidecar) -> int:
    return sum(len(t.calls) for t in sc.rt.transports.values() if isinstance(t, SimTransport))


def assert_error_shape(path: str, body: bytes) -> None:
    doc = orjson.loads(body)
    if path.startswith("/v1/messages"):
        assert doc["type"] == "error", doc
        assert isinstance(doc["error"]["type"], str) and isinstance(doc["error"]["message"], str)
    else:
        err = doc["error"]
        assert isinstance(err["message"], str) and isinstance(err["type"], str), doc
        assert "code" in err and "param" in err, doc


# --- strategies -------------------------------------------------------------------------------

scalars = (st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40))
json_values = st.recursive(scalars, lambda kids: st.lists(kids, max_size=4)
                           | st.dictionaries(st.text(max_size=12), kids, max_size=4),
                           max_leaves=16)
models = st.sampled_from(["orca/coding", "coding", "orca/background", "claude-sonnet-4-5",
                          "small-o", "big-a", "sim-o:small-o", "sim-a:small-o", "small-a:cheap",
                          "orca/nope", "", "  ", "orca/", ":", "nitro"]) | json_values
roles = st.sampled_from(["user", "assistant", "system", "developer", "tool", "function"]) | scalars
text_parts = st.text(max_size=200) | st.sampled_from([
    "Traceback (most recent call last):\n  File \"a.py\", line 3\nKeyError: 'x'",
    "[tool] run the tests", "why does this deadlock? prove the race condition", "\x00\ud7ff"])
tool_result_orphans = st.one_of(
    # OpenAI: a tool message answering a call that was never made.
    st.builds(lambda c, i: {"role": "tool", "tool_call_id": i, "content": c},
              text_parts | json_values, st.text(max_size=20) | scalars),
    # Anthropic: a tool_result block with no tool_use before it.
    st.builds(lambda c, i, e: {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": i, "content": c, "is_error": e}]},
        text_parts | json_values, st.text(max_size=20) | scalars, json_values),
    # An assistant turn whose tool calls are malformed.
    st.builds(lambda a: {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "run", "arguments": a}}]},
        json_values | st.text(max_size=30)),
    st.builds(lambda a: {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "run", "input": a}]}, json_values),
)
messages = st.builds(lambda r, c: {"role": r, "content": c}, roles,
                     text_parts | json_values | st.lists(
                         st.fixed_dictionaries({"type": st.sampled_from(
                             ["text", "image", "thinking", "tool_result", "junk"]) | scalars},
                             optional={"text": text_parts | json_values,
                                       "cache_control": json_values}), max_size=3))
message_lists = st.lists(messages | tool_result_orphans, max_size=6) | json_values
bodies = st.fixed_dictionaries({}, optional={
    "model": models, "messages": message_lists, "stream": st.booleans() | json_values,
    "max_tokens": st.integers(min_value=-5, max_value=10**12) | json_values,
    "max_completion_tokens": json_values, "tools": st.lists(json_values, max_size=3) | scalars,
    "system": text_parts | json_values, "metadata": json_values, "stream_options": json_values,
    "routing": json_values, "provider": json_values, "prompt_cache_key": json_values,
    "temperature": json_values, "thinking": json_values,
})
headers = st.fixed_dictionaries({}, optional={
    "x-orcarouter-tier": st.sampled_from(["strong", "ONCE", "base", "ultra", "", "strong,once",
                                          "x" * 5000]),
    "x-orca-session": st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=300),
    "x-request-id": st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=300),
    "anthropic-version": st.sampled_from(["2023-06-01", "junk"]),
})


DEPTHS = (10, 252, 253, 254, 255, 256, 600, 1022, 1023, 1024, 1025, 150_000)


def _mangle(raw: bytes, how: str, pos: int, size: int) -> bytes:
    """Damage a body: invalid UTF-8, truncation, a deep nest, a huge string, a non-object."""
    at = pos % (len(raw) + 1)
    if how == "utf8":
        return raw[:at] + b"\xff\xfe\xc3" + raw[at:]
    if how == "utf8_in_string":
        return raw.replace(b'"', b'"\xed\xa0\x80', 1)  # a lone surrogate, UTF-8 encoded
    if how == "truncate":
        return raw[:at]
    if how == "deep":  # around orjson's write limit (254), its read limit (1024), and past
        depth = DEPTHS[size % len(DEPTHS)]
        field = (b"messages", b"tools", b"metadata")[pos % 3]
        if pos % 2:
            nest = b'{"a":' * depth + b"1" + b"}" * depth
        else:
            nest = b"[" * depth + b"]" * depth
        return b'{"model":"orca/coding","stream":%s,"%s":%s}' % (
            b"true" if size % 2 else b"false", field, nest)
    if how == "huge":
        return orjson.dumps({"model": "orca/coding", "messages": [
            {"role": "user", "content": "y" * (200_000 + size % 700_000)}]})
    if how == "array":
        return b"[" + raw + b"]"
    if how == "scalar":
        return raw[:0] + (b'"orca/coding"', b"null", b"1e999", b"-0", b"")[size % 5]
    return raw


def _encode(body: dict[str, Any], ascii_only: bool) -> bytes:
    # The stdlib encoder: integers past 64 bits are valid JSON that orjson cannot write.
    return json.dumps(body, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


raw_bodies = st.builds(
    _mangle, st.builds(_encode, bodies, st.booleans()),
    st.sampled_from(["none", "none", "none", "utf8", "utf8_in_string", "truncate", "deep",
                     "huge", "array", "scalar"]),
    st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=10**6))


@SETTINGS
@given(raw=raw_bodies, hdrs=headers, path=st.sampled_from(PATHS))
async def test_fuzzed_bodies_get_a_2xx_or_a_well_shaped_4xx_and_4xx_write_nothing(
        sc: Sidecar, raw: bytes, hdrs: dict[str, str], path: str) -> None:
    before, calls = await state_keys(sc.store), sim_calls(sc)
    r = await sc.http.post(path, content=raw, headers={"content-type": "application/json",
                                                       **hdrs})
    if r.status_code == 503:
        # SPEC §1.2: orca's own 503 only when nothing could be attempted (here: no model of
        # the request's format, or none with a large enough context window).
        assert r.headers.get("x-should-retry") == "false", r.content[:300]
        assert b"serve" in r.content and sim_calls(sc) == calls, r.content[:300]
    else:
        assert r.status_code < 500, (r.status_code, r.content[:500])
    if r.status_code >= 400:
        assert_error_shape(path, r.content)
        assert await state_keys(sc.store) == before, "a refused request wrote state"
    else:
        assert 200 <= r.status_code < 300
        assert "x-orca-request-id" in r.headers


@SETTINGS
@given(raw=raw_bodies)
async def test_fuzzed_count_tokens_bodies_never_fail(sc: Sidecar, raw: bytes) -> None:
    before = sim_calls(sc)
    r = await sc.http.post("/v1/messages/count_tokens", content=raw,
                           headers={"content-type": "application/json"})
    assert r.status_code in (200, 400, 404, 413), (r.status_code, r.content[:300])
    if r.status_code == 200:
        assert isinstance(r.json()["input_tokens"], int)
    else:
        assert_error_shape("/v1/messages", r.content)
    assert sim_calls(sc) == before, "count_tokens is estimated locally"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("path", PATHS)
async def test_bodies_nested_deeper_than_can_be_forwarded_are_a_400(
        sc: Sidecar, path: str, stream: bool) -> None:
    """orjson reads 1024 levels but writes 254: a body in between parsed, then broke the
    forwarder's re-encoding (OpenAI streams get include_usage added) and the sim's hashing,
    answering orca's own 502. It is malformed input, so a 400 before anything is decided."""
    for depth in (250, 255, 400, 1024):
        nest = b"[" * depth + b"]" * depth
        raw = b'{"model":"orca/coding","stream":%s,"messages":[{"role":"user","content":"hi",' \
              b'"x":%s}]}' % (b"true" if stream else b"false", nest)
        before = await state_keys(sc.store)
        r = await sc.http.post(path, content=raw, headers={"content-type": "application/json"})
        if depth + 3 <= 254:
            assert r.status_code == 200, (depth, r.content[:300])
            continue
        assert r.status_code == 400, (depth, r.status_code, r.content[:300])
        assert_error_shape(path, r.content)
        assert b"nests JSON deeper" in r.content or b"depth limit" in r.content
        assert await state_keys(sc.store) == before


WRONG_TYPES = [
    ("/v1/chat/completions", {"messages": "x"}, "`messages` must be an array, not a string"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}],
                              "stream": "false"},
     "`stream` must be a boolean (true or false), not a string"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}],
                              "max_tokens": "lots"}, "`max_tokens` must be an integer"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "tools": {}},
     "`tools` must be an array, not an object"),
    ("/v1/messages", {"max_tokens": 16, "messages": [5]},
     "`messages` must be an array of message objects"),
    ("/v1/messages", {"max_tokens": 16, "messages": [{"role": "user", "content": "hi"}],
                      "stream": "yes"}, "`stream` must be a boolean"),
    ("/v1/messages", {"max_tokens": 16}, "`messages` is required"),
    ("/v1/responses", {"input": 5}, "`input` must be a string or an array, not an integer"),
    ("/v1/responses", {"input": "hi", "max_output_tokens": "many"},
     "`max_output_tokens` must be an integer, not a string"),
    ("/v1/messages/count_tokens", {"messages": [{"role": "user", "content": "hi"}],
                                   "system": 5}, "`system` must be a string or an array"),
]


@pytest.mark.parametrize(("path", "fields", "said"), WRONG_TYPES)
async def test_a_top_level_field_of_the_wrong_type_is_a_400_saying_which(
        sc: Sidecar, path: str, fields: dict[str, Any], said: str) -> None:
    """What the provider would refuse is refused first: a 400 in the caller's shape naming
    the field, nothing sent upstream, no session state (a `"stream": "false"` once streamed)."""
    before, calls = await state_keys(sc.store), sim_calls(sc)
    model = "orca/coding" if path != "/v1/messages/count_tokens" else "claude-x"
    r = await sc.http.post(path, json={"model": model, **fields},
                           headers={"x-orca-session": "typed"})
    assert r.status_code == 400, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert said in r.text
    assert_error_shape("/v1/messages" if path.startswith("/v1/messages") else path, r.content)
    assert sim_calls(sc) == calls and await state_keys(sc.store) == before


async def test_a_model_of_the_wrong_type_is_named_as_such(sc: Sidecar) -> None:
    r = await sc.http.post("/v1/chat/completions", json={"model": 42, "messages": []})
    assert r.status_code == 400
    assert "`model` field must be a string" in r.text and "not an integer" in r.text


# --- oversized bodies -------------------------------------------------------------------------


async def _raw_exchange(port: int, head: bytes, chunks: list[bytes]) -> tuple[bytes, bool]:
    """Send `head` and `chunks` on a fresh connection; return what came back within 3 s and
    whether the server closed the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head)
        for chunk in chunks:
            writer.write(chunk)
        await writer.drain()
        got = b""
        closed = False
        async with asyncio.timeout(3):
            while True:
                data = await reader.read(65536)
                if not data:
                    closed = True
                    break
                got += data
    except TimeoutError:
        closed = False
    except ConnectionResetError:  # closed with our unread bytes in its buffer: an RST
        closed = True
    finally:
        writer.close()
    return got, closed


@pytest.mark.parametrize("path", PATHS)
async def test_a_content_length_over_the_limit_is_refused_before_reading(
        sc: Sidecar, path: str) -> None:
    before = await state_keys(sc.store)
    calls = sim_calls(sc)
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{sc.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {LIMIT * 50}\r\n\r\n").encode()
    t0 = time.monotonic()
    got, closed = await _raw_exchange(sc.port, head, [b'{"model":"orca/coding"'])
    assert got.startswith(b"HTTP/1.1 413 "), got[:200]
    assert closed and time.monotonic() - t0 < 2.0, "waited for a body it was never sent"
    assert b"connection: close" in got.lower()
    assert_error_shape(path, got.split(b"\r\n\r\n", 1)[1])
    assert sim_calls(sc) == calls and await state_keys(sc.store) == before


async def test_a_chunked_body_over_the_limit_is_refused_as_soon_as_it_passes_it(
        sc: Sidecar) -> None:
    """No Content-Length: the limit is checked per chunk. The body never ends, so a server
    that read it whole could never answer."""
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{sc.port}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    piece = b"x" * 65536
    chunks = [b"%x\r\n" % len(piece) + piece + b"\r\n"] * (LIMIT // len(piece) + 2)
    got, closed = await _raw_exchange(sc.port, head, chunks)
    assert got.startswith(b"HTTP/1.1 413 "), got[:200]
    assert closed
    assert_error_shape("/v1/chat/completions", got.split(b"\r\n\r\n", 1)[1])
    assert await state_keys(sc.store) == {}


async def test_a_body_just_under_the_limit_is_served(sc: Sidecar) -> None:
    body = orjson.dumps({"model": "orca/coding", "messages": [
        {"role": "user", "content": "z" * (LIMIT - 200)}]})
    assert len(body) < LIMIT
    r = await sc.http.post("/v1/chat/completions", content=body,
                           headers={"content-type": "application/json"})
    assert r.status_code == 200
    assert sim_calls(sc) == 1



MALFORMED_CONFIG = f"""
{sim_channels()}
[models.small-o]
input = 0.1
[models.small-a]
input = 1.0

[routers.coding]
strategy = "cheapest"
mode = "price"
allowed_models = ["small-o", "small-a"]
fallbacks = ["small-a"]
"""


async def test_a_body_its_codec_cannot_read_is_a_400_and_never_moves_the_pin() -> None:
    """A Messages turn pinned to an OpenAI-format model whose message content has the wrong
    type: the translator cannot read it, and no other channel (here a Messages one that
    would take the raw bytes) gets it instead: a 400, nothing sent, the pin where it was."""
    async with sidecar(loads(MALFORMED_CONFIG, source="malformed")) as sc:
        headers = {"x-orca-session": "mal-pin", "x-api-key": "agent"}

        async def turn(content: object) -> Any:
            return await sc.http.post("/v1/messages", headers=headers, json={
                "model": "orca/coding", "max_tokens": 16,
                "messages": [{"role": "user", "content": content}]})

        first = await turn("rename x to count")
        assert first.status_code == 200 and first.headers["x-orca-model"] == "small-o"
        calls = sim_calls(sc)
        bad = await turn(5)
        assert bad.status_code == 400, bad.text
        assert_error_shape("/v1/messages", bad.content)
        assert "not a valid anthropic request" in bad.text
        assert sim_calls(sc) == calls
        after = await turn("and the tests")
        assert after.status_code == 200 and after.headers["x-orca-model"] == "small-o"
