"""What real agents need back (SPEC §14): the model name they sent, the provider's own
context-overflow error, probes of the base URL, and honest error codes."""

from __future__ import annotations

import anthropic
import httpx
import openai
import orjson
import pytest

from orca_cli.state.base import ReadRequest, SlotRef
from tests.e2e.conftest import Sidecar
from tests.e2e.conftest import anthropic_client as _an
from tests.e2e.conftest import openai_client as _oa

pytestmark = pytest.mark.asyncio

MSGS = [{"role": "user", "content": "rename the variable x to count in utils.py"}]
JSON = {"content-type": "application/json"}


async def test_a_router_answers_under_the_name_the_client_sent(sidecar: Sidecar) -> None:
    client = _oa(sidecar, **{"X-Orca-Session": "name-oa"})
    raw = await client.chat.completions.with_raw_response.create(model="orca/coding",
                                                                  messages=MSGS)
    assert raw.parse().model == "orca/coding"
    assert raw.headers["x-orca-model"] != "orca/coding"  # the served one is in the header
    stream = await client.chat.completions.create(model="orca/coding", messages=MSGS,
                                                  stream=True)
    models = {chunk.model async for chunk in stream}
    assert models == {"orca/coding"}


async def test_an_alias_answers_under_the_agents_own_model_name(sidecar: Sidecar) -> None:
    # Claude Code re-reads this name on --continue; a served name would move the session
    # to another alias (claude-haiku-* goes to the background router).
    client = _an(sidecar, **{"X-Claude-Code-Session-Id": "name-an"})
    msg = await client.messages.create(model="claude-sonnet-4-5-20250929", max_tokens=64,
                                       messages=MSGS)
    assert msg.model == "claude-sonnet-4-5-20250929"
    async with client.messages.stream(model="claude-sonnet-4-5-20250929", max_tokens=64,
                                      messages=MSGS) as stream:
        final = await stream.get_final_message()
    assert final.model == "claude-sonnet-4-5-20250929"


async def test_a_concrete_model_answers_as_itself(sidecar: Sidecar) -> None:
    client = _oa(sidecar)
    done = await client.chat.completions.create(model="deepseek-chat", messages=MSGS)
    assert done.model == "deepseek-chat"


def _huge(chars: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": "word " * (chars // 5)}]


async def test_context_overflow_is_the_providers_own_400(sidecar: Sidecar) -> None:
    # over every window of the example config (1,047,576 tokens) even at a token per 6 bytes
    messages = _huge(8_000_000)
    with pytest.raises(anthropic.BadRequestError) as an_err:
        await _an(sidecar).messages.create(model="orca/coding", max_tokens=64,
                                           messages=messages)  # type: ignore[arg-type]
    assert an_err.value.status_code == 400
    body = an_err.value.body
    assert isinstance(body, dict) and body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"].startswith("prompt is too long: ")
    assert "maximum" in body["error"]["message"]
    with pytest.raises(openai.BadRequestError) as oa_err:
        await _oa(sidecar).chat.completions.create(model="orca/coding",
                                                   messages=messages)  # type: ignore[arg-type]
    assert oa_err.value.code == "context_length_exceeded"
    assert "maximum context length is 1047576 tokens" in oa_err.value.message


async def test_a_concrete_model_overflows_in_the_providers_words_too(sidecar: Sidecar) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        await _oa(sidecar).chat.completions.create(
            model="deepseek-chat", messages=_huge(800_000))  # type: ignore[arg-type]
    assert err.value.code == "context_length_exceeded"
    assert "128000" in err.value.message


async def test_the_base_url_answers_probes(sidecar: Sidecar) -> None:
    async with httpx.AsyncClient(base_url=sidecar.base) as http:
        got = await http.get("/")
        assert got.status_code == 200 and got.json()["name"] == "orca"
        head = await http.head("/")
        assert head.status_code == 200 and head.content == b""


async def test_an_unknown_endpoint_is_not_an_unknown_model(sidecar: Sidecar) -> None:
    async with httpx.AsyncClient(base_url=sidecar.base) as http:
        got = await http.post("/v1/embeddings", content=b"{}", headers=JSON)
    assert got.status_code == 404
    assert got.json()["error"]["code"] == "unknown_endpoint"
    assert "/v1/responses" in got.json()["error"]["message"]


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("GET", "/v1/chat/completions", "POST"), ("GET", "/v1/messages", "POST"),
    ("PUT", "/v1/models", "GET, HEAD"), ("POST", "/healthz", "GET")])
async def test_a_served_path_with_another_method_is_405_naming_the_method(
        sidecar: Sidecar, method: str, path: str, allow: str) -> None:
    async with httpx.AsyncClient(base_url=sidecar.base) as http:
        got = await http.request(method, path, content=b"{}", headers=JSON)
    assert got.status_code == 405 and got.headers["allow"] == allow
    doc = got.json()
    err = doc["error"]
    assert f"takes {allow.replace(', ', ' or ')}, not {method}" in err["message"]
    assert (doc.get("type") == "error") == path.startswith("/v1/messages")


async def test_an_unknown_model_is_model_not_found(sidecar: Sidecar) -> None:
    with pytest.raises(openai.NotFoundError) as err:
        await _oa(sidecar).chat.completions.create(model="no-such-model", messages=MSGS)
    assert err.value.code == "model_not_found"


@pytest.mark.parametrize("body", [
    {"model": 5, "messages": "x"},
    {"model": "orca/coding", "messages": "x"},
    {"model": "orca/coding", "messages": [1, 2]},
    {"messages": []},
])
async def test_count_tokens_checks_its_types(sidecar: Sidecar, body: dict[str, object]) -> None:
    async with httpx.AsyncClient(base_url=sidecar.base) as http:
        got = await http.post("/v1/messages/count_tokens", content=orjson.dumps(body),
                              headers={**JSON, "anthropic-version": "2023-06-01"})
    assert got.status_code == 400
    assert got.json()["error"]["type"] == "invalid_request_error"


# --- side requests (SPEC §14.1) ---------------------------------------------------------

TITLE_SYSTEM = [
    {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1; cc_entrypoint=cli"},
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
    {"type": "text", "text": "You are naming a coding session so the user can pick it out "
                             "later. Answer with a short title."},
]
TITLE_FORMAT = {"type": "json_schema", "schema": {
    "type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"],
    "additionalProperties": False}}
TOOLS = [{"name": "Bash", "description": "Run a shell command",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]


async def _post_messages(sc: Sidecar, body: dict[str, object], session: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=sc.base) as http:
        return await http.post("/v1/messages", content=orjson.dumps(body), headers={
            **JSON, "anthropic-version": "2023-06-01", "x-claude-code-session-id": session})


async def test_a_title_request_is_a_side_request_and_decides_nothing(sidecar: Sidecar) -> None:
    session = "cc-title-1"
    title = {"model": "claude-sonnet-4-5", "max_tokens": 128000, "tools": [],
             "system": TITLE_SYSTEM, "output_config": {"format": TITLE_FORMAT},
             "messages": [{"role": "user", "content": "<session>fix the flaky test</session>"}]}
    got = await _post_messages(sidecar, title, session)
    assert got.status_code == 200
    assert got.headers["x-orca-session-tier"] == "base; reason=side"
    assert got.json()["model"] == "claude-sonnet-4-5"  # the name it sent
    store = sidecar.rt.gate.store
    trace = await store.get_trace(got.headers["x-orca-request-id"])
    assert trace is not None and trace["side"] == {"rule": "claude-code-title"}
    assert trace["session_id"] == session and trace["router"] == "background"
    snap = await store.read(ReadRequest(router="coding", session=session))
    assert snap.tier is None and not snap.pins, "a side request wrote session state"

    turn = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "tools": TOOLS,
            "system": TITLE_SYSTEM[:2],
            "messages": [{"role": "user", "content": "fix the flaky test in tests/test_io.py"}]}
    real = await _post_messages(sidecar, turn, session)
    assert real.status_code == 200
    assert real.headers["x-orca-session-tier"] == "base; reason=default"
    trace = await store.get_trace(real.headers["x-orca-request-id"])
    assert trace is not None and trace["router"] == "coding" and "side" not in trace
    assert trace["difficulty"]["full"] is not None, "the real turn chose the base pin"
    snap = await store.read(ReadRequest(router="coding", session=session))
    assert snap.pins.get("base") == real.headers["x-orca-model"]


async def test_a_side_request_counts_in_its_sessions_figures(sidecar: Sidecar) -> None:
    session = "cc-title-2"
    turn = {"model": "claude-sonnet-4-5", "max_tokens": 512, "tools": TOOLS,
            "messages": [{"role": "user", "content": "rename x to count"}]}
    assert (await _post_messages(sidecar, turn, session)).status_code == 200
    title = {"model": "claude-sonnet-4-5", "max_tokens": 64, "tools": [],
             "system": TITLE_SYSTEM, "messages": [{"role": "user", "content": "name it"}]}
    assert (await _post_messages(sidecar, title, session)).status_code == 200
    figures = await sidecar.rt.gate.store.get(SlotRef.of_session("coding", session), "figures")
    assert figures is not None
    counts = figures.value
    assert float(counts["requests"]) == 1 and float(counts["side_requests"]) == 1
    # The router that served it counts it in `orca stats`, as housekeeping.
    from orca_cli.admin.stats import stats

    figures_by_router = (await stats(sidecar.rt.cfg, sidecar.rt.gate.store,
                                     sidecar.rt.clock.now()))["routers"]
    assert figures_by_router["background"]["side_requests"] >= 1
    assert figures_by_router["background"]["requests"] >= figures_by_router["background"][
        "side_requests"]
    assert figures_by_router["background"]["cost_usd"] > 0


async def test_an_alias_to_a_sessionless_router_is_a_side_request_of_its_session(
        sidecar: Sidecar) -> None:
    """SPEC §14.1: Claude Code's `claude-haiku-*` requests (aliased to `orca/background` in
    the example) under its session id are side requests of that session: `reason=side`, the
    session in the trace (so `orca requests --session` lists them), no pin or tier state of
    the session. The example has two session-aware routers (`coding`, `auto`), so which one's
    session it is is not in the request: its figures count under the router that served it
    (`orca stats`), not in the session's. Without a session signal it names no session."""
    session = "cc-haiku-1"
    turn = {"model": "claude-sonnet-4-5", "max_tokens": 512, "tools": TOOLS,
            "messages": [{"role": "user", "content": "rename x to count"}]}
    assert (await _post_messages(sidecar, turn, session)).status_code == 200
    haiku = {"model": "claude-haiku-4-5-20251001", "max_tokens": 100,
             "messages": [{"role": "user", "content": "new topic?"}]}
    got = await _post_messages(sidecar, haiku, session)
    assert got.status_code == 200
    assert got.headers["x-orca-session-tier"] == "base; reason=side"
    store = sidecar.rt.gate.store
    trace = await store.get_trace(got.headers["x-orca-request-id"])
    assert trace is not None and trace["session_id"] == session
    assert trace["router"] == "background" and trace["side"] == {
        "rule": "alias claude-haiku-*"}
    figures = await store.get(SlotRef.of_session("coding", session), "figures")
    assert figures is not None and "side_requests" not in figures.value
    snap = await store.read(ReadRequest(router="background", session=session))
    assert snap.tier is None and not snap.pins, "a side request wrote session state"

    async with httpx.AsyncClient(base_url=sidecar.base) as http:  # no session header at all
        bare = await http.post("/v1/messages", content=orjson.dumps(haiku), headers={
            **JSON, "anthropic-version": "2023-06-01"})
    assert bare.headers["x-orca-session-tier"] == "base; reason=no_session"


async def test_with_one_session_router_an_aliased_side_request_counts_in_its_session() -> None:
    from dataclasses import replace

    from tests.e2e.conftest import example_config, serve_sidecar

    cfg = example_config()
    cfg = replace(cfg, routers={n: r for n, r in cfg.routers.items() if n != "auto"})
    async with serve_sidecar(cfg) as sc:
        session = "cc-haiku-2"
        turn = {"model": "claude-sonnet-4-5", "max_tokens": 512, "tools": TOOLS,
                "messages": [{"role": "user", "content": "rename x to count"}]}
        assert (await _post_messages(sc, turn, session)).status_code == 200
        haiku = {"model": "claude-haiku-4-5", "max_tokens": 100,
                 "messages": [{"role": "user", "content": "new topic?"}]}
        got = await _post_messages(sc, haiku, session)
        assert got.headers["x-orca-session-tier"] == "base; reason=side"
        figures = await sc.rt.gate.store.get(SlotRef.of_session("coding", session), "figures")
        assert figures is not None
        assert (float(figures.value["requests"]), float(figures.value["side_requests"])) == (1, 1)


async def test_a_codex_title_request_is_recognised_by_its_title_schema(
        sidecar: Sidecar) -> None:
    body = {"model": "gpt-5-codex", "stream": False, "store": False, "tools": [],
            "input": [{"type": "message", "role": "developer",
                       "content": [{"type": "input_text",
                                    "text": "You are a coding agent running in the Codex CLI"}]},
                      {"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "title: fix the build"}]}],
            "text": {"format": {"type": "json_schema", "name": "codex_output_schema",
                                "strict": True, "schema": {
                                    "type": "object",
                                    "properties": {"title": {"type": "string"}},
                                    "required": ["title"], "additionalProperties": False}}}}
    async with httpx.AsyncClient(base_url=sidecar.base) as http:
        got = await http.post("/v1/responses", content=orjson.dumps(body),
                              headers={**JSON, "session-id": "codex-title-1"})
    assert got.status_code == 200, got.text
    assert got.headers["x-orca-session-tier"] == "base; reason=side"
    assert got.json()["model"] == "gpt-5-codex"


async def test_without_a_side_router_a_title_reads_the_base_pin_and_writes_nothing() -> None:
    from orca_cli.config.load import loads
    from orca_cli.config.template import example_text
    from orca_cli.testing import sidecar as serve

    text = example_text().replace('side_router = "orca/background"', 'side_router = ""')
    cfg = loads(text, source="example")
    assert cfg.routing.side_router == ""
    async with serve(cfg) as sc:
        session = "cc-title-3"
        turn = {"model": "claude-sonnet-4-5", "max_tokens": 512, "tools": TOOLS,
                "messages": [{"role": "user", "content": "rename x to count"}]}
        first = await _post_messages(sc, turn, session)  # type: ignore[arg-type]
        pinned = first.headers["x-orca-model"]
        title = {"model": "claude-sonnet-4-5", "max_tokens": 64, "tools": [],
                 "system": TITLE_SYSTEM, "messages": [{"role": "user", "content": "name it"}]}
        got = await _post_messages(sc, title, session)  # type: ignore[arg-type]
        assert got.headers["x-orca-session-tier"] == "base; reason=side"
        assert got.headers["x-orca-model"] == pinned  # the session's base pin, read only
        trace = await sc.rt.gate.store.get_trace(got.headers["x-orca-request-id"])
        assert trace is not None and trace["router"] == "coding"
        snap = await sc.rt.gate.store.read(ReadRequest(router="coding", session=session))
        assert snap.tier is not None and snap.tier.get("turn") == 1, "the title was a turn"


# --- previous_response_id (SPEC §13.1) ---------------------------------------------------


async def test_previous_response_id_is_served_where_the_response_is_stored(
        sidecar: Sidecar) -> None:
    client = _oa(sidecar, **{"session-id": "resp-chain-1"})
    first = await client.responses.with_raw_response.create(
        model="orca/coding", input="list the files in src/")
    made = first.parse()
    for _ in range(3):  # whatever the routing would pick, the stored response's upstream serves
        again = await client.responses.with_raw_response.create(
            model="orca/coding", input="and now count them", previous_response_id=made.id)
        assert again.headers["x-orca-channel"] == first.headers["x-orca-channel"]
        assert again.headers["x-orca-model"] == first.headers["x-orca-model"]
        trace = await sidecar.rt.gate.store.get_trace(again.headers["x-orca-request-id"])
        assert trace is not None
        assert [p["reason"] for p in trace["pins"]] == ["previous_response"]
        assert trace["selected"]["key_index"] == trace["pins"][0]["value"]["key_index"]


async def test_a_stored_response_that_cannot_move_is_a_400_saying_why(sidecar: Sidecar) -> None:
    client = _oa(sidecar, **{"session-id": "resp-chain-2"})
    made = await client.responses.create(model="orca/coding", input="list the files in src/")
    with pytest.raises(openai.BadRequestError) as err:
        await _oa(sidecar, **{"session-id": "resp-chain-2", "x-orcarouter-tier": "strong"}
                  ).responses.create(model="orca/coding", input="go on",
                                     previous_response_id=made.id)
    assert err.value.code == "previous_response_not_found"
    assert "store: false" in err.value.message and "strong tier" in err.value.message


async def test_store_false_records_nothing_and_an_unknown_id_routes_as_usual(
        sidecar: Sidecar) -> None:
    client = _oa(sidecar, **{"session-id": "resp-chain-3"})
    made = await client.responses.create(model="orca/coding", input="hello", store=False)
    later = await client.responses.with_raw_response.create(
        model="orca/coding", input="again", previous_response_id=made.id)
    trace = await sidecar.rt.gate.store.get_trace(later.headers["x-orca-request-id"])
    assert trace is not None and all(p["reason"] != "previous_response" for p in trace["pins"])


async def test_a_six_turn_responses_session_keeps_one_model_and_key_and_reads_the_cache(
        sidecar: Sidecar) -> None:
    client = _oa(sidecar, **{"session-id": "resp-six"})
    items: list[dict[str, object]] = [
        {"type": "message", "role": "developer",
         "content": [{"type": "input_text", "text": "You are a coding agent. " * 40}]}]
    served: set[tuple[str, str]] = set()
    cached: list[int] = []
    for turn in range(6):
        items.append({"type": "message", "role": "user",
                      "content": [{"type": "input_text", "text": f"step {turn}: edit main.go"}]})
        raw = await client.responses.with_raw_response.create(
            model="orca/coding", input=items, store=False)  # type: ignore[arg-type]
        done = raw.parse()
        assert done.model == "orca/coding"
        served.add((raw.headers["x-orca-model"], raw.headers["x-orca-channel"]))
        trace = await sidecar.rt.gate.store.get_trace(raw.headers["x-orca-request-id"])
        assert trace is not None and trace["session_id"] == "resp-six"
        served.add((trace["selected"]["model"], str(trace["selected"]["key_index"])))
        assert done.usage is not None
        cached.append(done.usage.input_tokens_details.cached_tokens)
        items.append({"type": "message", "role": "assistant",
                      "content": [{"type": "output_text", "text": done.output_text}]})
    assert len(served) == 2, served  # one (model, channel) and one (model, key)
    assert cached[0] == 0 and all(c > 0 for c in cached[1:]), cached


async def test_a_side_request_under_an_id_of_its_own_makes_no_session(sidecar: Sidecar) -> None:
    from orca_cli.admin.service import list_sessions

    title = {"model": "claude-sonnet-4-5", "max_tokens": 64, "tools": [],
             "system": TITLE_SYSTEM, "messages": [{"role": "user", "content": "name it"}]}
    got = await _post_messages(sidecar, title, "only-a-title")
    assert got.headers["x-orca-session-tier"] == "base; reason=side"
    listed = await list_sessions(sidecar.rt.gate.store, sidecar.rt.cfg)
    assert all(v["session_id"] != "only-a-title" for v in listed), listed


async def test_the_sdks_retrieve_a_model_the_sidecar_serves(sidecar: Sidecar) -> None:
    """`models.retrieve` (`GET /v1/models/{id}`): a listed name, a name an alias pattern
    catches, and an unknown one (404 `model_not_found` in each SDK's shape)."""
    oa, an = _oa(sidecar), _an(sidecar)
    listed = [m.id async for m in oa.models.list()]
    assert "orca/coding" in listed
    got = await oa.models.retrieve("orca/coding")
    assert got.id == "orca/coding" and got.object == "model"
    caught = await an.models.retrieve("claude-sonnet-4-5-20250929")  # by the example's alias
    assert caught.id == "claude-sonnet-4-5-20250929" and caught.type == "model"
    with pytest.raises(openai.NotFoundError) as err:
        await oa.models.retrieve("no-such-model")
    assert err.value.code == "model_not_found"
    with pytest.raises(anthropic.NotFoundError):
        await an.models.retrieve("no-such-model")
    async with httpx.AsyncClient(base_url=sidecar.base) as http:
        head = await http.head("/v1/models")
    assert head.status_code == 200 and head.content == b""


@pytest.mark.parametrize("tier", ["strong", "once"])
async def test_a_claude_code_turn_asked_strong_is_served_on_the_example_configs_frontier(
        sidecar: Sidecar, tier: str) -> None:
    """Claude Code's main turn (a `system` message inside `messages`) asked strong goes to the
    example's Anthropic frontier channel natively, and is served — not refused as a role the
    provider would not take."""
    body = {"model": "claude-opus-5-5", "max_tokens": 64, "messages": [
        {"role": "user", "content": "fix the failing build"},
        {"role": "system", "content": "# Environment You have been invoked in the repo"}]}
    async with httpx.AsyncClient(base_url=sidecar.base) as http:
        got = await http.post("/v1/messages", json=body, headers={
            "x-api-key": "orca", "anthropic-version": "2023-06-01",
            "x-claude-code-session-id": f"cc-strong-{tier}", "x-orcarouter-tier": tier})
    assert got.status_code == 200, got.text
    assert got.headers["x-orca-session-tier"].startswith("strong")
    assert got.headers["x-orca-channel"] == "sim-anthropic-frontier"


async def test_a_websocket_upgrade_is_426_so_codex_goes_on_over_http(
        sidecar: Sidecar, caplog: pytest.LogCaptureFixture) -> None:
    """Codex's built-in `openai` provider (`openai_base_url` pointed at orca) asks for its
    Responses WebSocket mode first. On a 426 it posts over HTTP at once; on the 405 a GET
    got before, it retried for 7 s (measured with Codex 0.171). uvicorn's warning to install
    a WebSocket library is not logged: orca answers the upgrade itself."""
    upgrade = {"connection": "Upgrade", "upgrade": "websocket", "sec-websocket-version": "13",
               "sec-websocket-key": "54GkWqvc03GyOkGavE03BQ=="}
    async with httpx.AsyncClient(base_url=sidecar.base) as http:
        got = await http.get("/v1/responses", headers=upgrade)
        plain = await http.get("/v1/responses")
    assert got.status_code == 426
    assert got.json()["error"]["code"] == "websocket_unsupported"
    assert plain.status_code == 405  # a GET without the upgrade is still the wrong method
    assert not [r for r in caplog.records if "WebSocket" in r.getMessage()]
